#!/usr/bin/env bash
# Device run 11 (staged12; run again as run 12 after the data checks moved behind the hold): the fallback test as committed (16 MiB by DMAs during the hold, then
# 1 MiB into another buffer, then 1 MiB after the hold), twice, and the two mutants that must
# fail it: waiting blocks that do not heed the verdict, copying threads that store without it.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2; do
timeout 100 $P/staged_cuda_test --gtest_filter='*SmCopy*:*UpToTheLimit*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
done
for m in nogo noverdict; do
  echo "== mutant $m (must fail)"
  timeout 60 $P/staged_cuda_test_mut_$m --gtest_filter='*SmCopyGoes*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:|Expected|Which|kernel" | head -12
  echo "rc=${PIPESTATUS[0]}"
done
date -u
