#!/usr/bin/env bash
# Device run 7 (staged8): the final tree (the SM copy on --sm-blocks 32): the CUDA tests and
# every scenario file twice on the real GPU.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
for k in 1 2; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run7-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run7-scenarios-cuda-$k.log; grep -E "FAILED|ERROR|wc-write-only" $OUT/run7-scenarios-cuda-$k.log | cut -c1-200 | head
done
date -u
