#!/usr/bin/env bash
# Device run 9: the driving lane fills the first segment until its DMA can be issued
# (staging_driver_fills, default on) against --no-driver-fill, three alternated bench rounds;
# the staged CUDA test (10 pipelines, one without the driver's fill).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -12
for i in 1 2 3; do
  for cfg in "" "--no-driver-fill"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,16M,64M --passes 11 $cfg > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
date -u
