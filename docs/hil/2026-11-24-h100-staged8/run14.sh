#!/usr/bin/env bash
# Device run 14 (staged8): the final tree (the fill frontier opt-in): the CUDA tests; a mutant
# whose lanes refill ring space before its DMA is done must fail staged_cuda_test; every scenario
# file once; one staged_probe timeline with --frontier.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
echo "== mutant"; timeout 300 $B/staged_cuda_test.mutant 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Which is" | head -10
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run14-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run14-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run14-scenarios-cuda.log | cut -c1-200 | head
timeout 100 $B/staged_probe --timeline --sizes 1M,16M,64M --copies 30 --frontier 2>&1 | grep -E "^==|pinned |staged H2D|phases" | grep -B1 -A1 "staged H2D" | cut -c1-300
date -u
