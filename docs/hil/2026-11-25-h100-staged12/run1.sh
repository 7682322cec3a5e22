#!/usr/bin/env bash
# Device run 1 (staged12): the SM copy by default up to 16 MiB with its start wait. The CUDA
# backend's tests, the staged engine's GPU tests (new: the fallback beside a kernel that holds
# every SM), staged_probe's phases of SM copies (when the kernel started), every scenario file.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 200 $P/staged_cuda_test --gtest_filter='*SmCopy*:*UpToTheLimit*:*Frontier*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|^\[       OK|Failure|note:|Expected|Which is|actual" | tail -20
for round in 1 2; do
  timeout 60 $P/staged_probe --timeline --sizes 1M,4M,16M --copies 15 2>&1 | grep -E "^== |pinned  |staged H2D|phases|note:" | cut -c1-220
done
timeout 200 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
timeout 240 $P/resmem run --backend cuda scenarios/ > $OUT/run1-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run1-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run1-scenarios-cuda.log | cut -c1-200 | head
date -u
