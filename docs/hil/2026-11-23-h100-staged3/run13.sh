#!/usr/bin/env bash
# Device run 13: the CUDA tests of the committed tree (CopyAsyncInto through EnqueueCopy).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u
$B/cuda_gpu_test 2>&1 | grep -E "^\[  |Failure|skipped" | tail -20
$B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure|skipped" | tail -6
$B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,256M --passes 7 2>&1 | grep -E "^staged|took"
