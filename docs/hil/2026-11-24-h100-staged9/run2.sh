#!/usr/bin/env bash
# Device run 2 (staged9): as run 1, with staged_cuda_test printing a failed copy's error
# (CopyOk): which of the ring checks the refill-early mutant trips, three times over, and the
# tree's staged_cuda_test again.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
for i in 1 2 3; do
  s=$(date +%s)
  timeout 100 $B/staged_cuda_test_refill_early --gtest_filter='*Gigabyte*' > /tmp/mutant.log 2>&1
  echo "== mutant $i rc=$? in $(( $(date +%s) - s )) s"
  grep -E "^\[  FAILED  \] Staged|refilled|differ|Failure" /tmp/mutant.log | cut -c1-400 | head -6
done
date -u
