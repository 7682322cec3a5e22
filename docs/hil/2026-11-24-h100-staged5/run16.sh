#!/usr/bin/env bash
# Device run 16: the staged CUDA test with CopiesFollowTheirPlan (the engine runs the plan's
# segment count, and the equal cut's where plans are off).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run16.log") 2>&1
timeout 180 $B/staged_cuda_test 2>&1 | grep -E "^\[  |OK \] StagedCudaLong|Failure|Expected|Which|actual" | tail -16
