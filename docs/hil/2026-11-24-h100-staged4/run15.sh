#!/usr/bin/env bash
# Device run 15: device-to-host lanes claim their piece before the DMA and prefetch its destination
# for writing (--prefetch-dst): the CUDA test, timelines (destination zeroed by the probe thread /
# left as the lanes wrote it), then bench A/B against the default, alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run15.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -8
timeout 90 $B/staged_probe --timeline --sizes 1M,4M,16M --copies 21 --prefetch-dst > $OUT/run15-probe.log 2>&1; echo "probe rc=$?"
grep -E "dispatch|pinned|staged D2H|phases" $OUT/run15-probe.log | cut -c1-300
for i in 1 2; do
  for cfg in "" "--prefetch-dst"; do
    out=$(timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default} rc=$?"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' | head -16
  done
done
date -u
