#!/usr/bin/env bash
# Device run 19: after the review's mends (one join for LanePool's two runs, the shared Reached,
# no behaviour change): the CUDA tests, every scenario file, one bench run.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run19.log") 2>&1
date -u
timeout 120 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -8
timeout 200 $B/resmem run --backend cuda scenarios/ > $OUT/run19-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run19-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run19-scenarios-cuda.log | head
timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 11 --json $OUT/run19-bench.json > $OUT/run19-bench.log 2>&1
echo "== bench rc=$?"; grep -E "^staged|UNRELIABLE|unreliable|host check" $OUT/run19-bench.log
date -u
