#!/usr/bin/env bash
# Device run 12: is a drain slow because it reads lines the device just wrote (drain-only after a
# DMA into the ring, no DMA beside it), or because DMAs run beside it? Timelines at 1 and 2 MiB;
# then every scenario file again after the seed000 pageable-staged bound became the claim.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u
timeout 60 $B/staged_probe --timeline --sizes 1M,2M --copies 21 > $OUT/p.log 2>&1; echo "probe rc=$?"
grep -E "dispatch|pinned|only|staged|last copy|phases" $OUT/p.log | cut -c1-600
timeout 300 $B/resmem run --backend cuda --json $OUT/run12-scenarios-cuda.json scenarios/ > $OUT/run12-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run12-scenarios-cuda.log
grep -E "FAILED|ERROR" $OUT/run12-scenarios-cuda.log | head -10
date -u
