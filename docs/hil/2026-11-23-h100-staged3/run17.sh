#!/usr/bin/env bash
# Device run 17: every scenario file on the real GPU, twice, after three seed000 cuda bounds became
# the claim (staged-path changes, seed003 files with kmod parts), JSON kept.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run17.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in a b; do
  $B/resmem run --backend cuda --json $OUT/scenarios-cuda-$r.json scenarios/ > $OUT/scenarios-cuda-$r.log 2>&1
  echo "== $r rc=$?"; tail -1 $OUT/scenarios-cuda-$r.log
  grep -E "FAILED|ERROR" $OUT/scenarios-cuda-$r.log | head -10
done
