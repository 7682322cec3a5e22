#!/usr/bin/env bash
# Device run 14: the final tree (6d0406b: bench's host check as CheckLaneHost, no behaviour
# change): the CUDA tests, every scenario file, one bench from 64 KiB to 1 GiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 180 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -3
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run14-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run14-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run14-scenarios-cuda.log | head
timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M,1G --passes 7 --json $OUT/run14-bench.json > $OUT/run14-bench.log 2>&1
echo "== bench rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' $OUT/run14-bench.log | head -20
date -u
