#!/usr/bin/env bash
# Device run 14 (staged10): the final tree: the CUDA tests and every scenario file.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run14-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run14-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run14-scenarios-cuda.log | cut -c1-200 | head
date -u
