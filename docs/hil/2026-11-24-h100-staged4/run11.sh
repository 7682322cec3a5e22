#!/usr/bin/env bash
# Device run 11: the tree as it will be committed: the CUDA tests, every scenario file on the real
# GPU, and one bench run with the host check's memcpy figure.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|tests ran" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -7
timeout 300 $B/resmem run --backend cuda --json $OUT/run11-scenarios-cuda.json scenarios/ > $OUT/run11-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run11-scenarios-cuda.log
grep -E "FAILED|ERROR" $OUT/run11-scenarios-cuda.log | head -10
timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --json $OUT/run11-bench.json > $OUT/run11-bench.log 2>&1
echo "== bench rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|unreliable|host check" $OUT/run11-bench.log
date -u
