#!/usr/bin/env bash
# Device run 9 (staged9): the review mends. One error builder for both ring checks of the fill
# frontier (the tree's staged_cuda_test, and the refill-early mutant of runs 1-2 twice), and bench
# --warm-cells whose device-to-host warm copy now follows the load the timed copies need (no
# second load): every cell must verify (exit 0), both pipelines.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
for i in 1 2; do
  timeout 100 $B/staged_cuda_test_refill_early --gtest_filter='*Gigabyte*' > /tmp/mutant.log 2>&1
  echo "== mutant $i rc=$?"
  grep -E "^\[  FAILED  \] Staged|refilled" /tmp/mutant.log | cut -c1-300 | head -3
done
for cfg in "--warm-cells" "--warm-cells --frontier"; do
  timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,16M,64M,256M --passes 5 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
  echo "== bench [$cfg] rc=$?"
  awk '$1=="staged" {printf "  %s %s %s %s %s %s\n", $1, $2, $3$4, $5, $6, $7} /UNRELIABLE|MISMATCH|warm-cells/' /tmp/bench.log | head -12
done
date -u
