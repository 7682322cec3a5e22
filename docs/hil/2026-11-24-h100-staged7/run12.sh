#!/usr/bin/env bash
# Device run 12 (staged7): the SM copy made opt-in and moved to a stream of the device's greatest
# priority (smx-run7: beside a program's kernel it otherwise waits for that kernel). The CUDA
# tests, every scenario file once (default: segment DMAs again), and bench rounds alternating
# --sm-copy-upto 64M with the default.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run12-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run12-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run12-scenarios-cuda.log | head
for i in 1 2 3; do
  for cfg in "--sm-copy-upto 64M" ""; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 11 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
