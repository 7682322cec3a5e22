#!/usr/bin/env bash
# Device run 10: the final engine (plans of long copies: a planned window of 32 x 8 MiB where the
# copy is exposed, 8 MiB segments elsewhere): the CUDA tests (a 1 GiB staged copy both ways
# added), every scenario file, and bench from 64 KiB to 1 GiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 180 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -14
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run10-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run10-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run10-scenarios-cuda.log | head
for i in 1 2; do
  timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M,1G --passes 7 > /tmp/bench.log 2>&1
  echo "== $i staged default rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
done
date -u
