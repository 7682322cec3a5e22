#!/usr/bin/env bash
# Device run 5 (staged7): the tree of 8e4a45c (host-to-device copies up to 64 MiB moved by the
# SMs): the CUDA tests, then every scenario file three times on the real GPU.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
for k in 1 2 3; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run5-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run5-scenarios-cuda-$k.log; grep -E "FAILED|ERROR|overlap" $OUT/run5-scenarios-cuda-$k.log | head
done
date -u
