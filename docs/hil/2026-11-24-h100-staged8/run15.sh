#!/usr/bin/env bash
# Device run 15 (staged8): staged_cuda_test with FrontierCopyReturnsAFailedDmaAndTheNextCopyIsIntact.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run15.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[       OK|^\[  PASSED|^\[  FAILED|Failure|Expected|Which is|skipped" | tail -30
date -u
