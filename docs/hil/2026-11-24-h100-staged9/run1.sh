#!/usr/bin/env bash
# Device run 1 (staged9): the fill frontier's new ring check (TransferEngine::CopyFrontier,
# FirstRefilledUnit). The tree's staged_cuda_test, then a mutant built from it whose lanes take
# a unit's ring space without waiting for the DMA that reads it (space_free always true): before
# the check that mutant made the frontier tests wait forever (staged8 run 14, 300 s limit); now
# each should fail with the ring check's error, in seconds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
s=$(date +%s)
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[       OK|^\[  PASSED|^\[  FAILED|Failure|note:" | tail -30
echo "== tree: $(( $(date +%s) - s )) s"
s=$(date +%s)
timeout 200 $B/staged_cuda_test_refill_early --gtest_filter='*Gigabyte*:*frontier*:*Frontier*' > /tmp/mutant.log 2>&1
echo "== mutant rc=$? in $(( $(date +%s) - s )) s"
grep -E "^\[       OK|^\[  PASSED|^\[  FAILED|refilled" /tmp/mutant.log | cut -c1-400 | head -30
date -u
