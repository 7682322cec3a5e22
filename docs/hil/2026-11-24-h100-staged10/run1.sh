#!/usr/bin/env bash
# Device run 1 (staged10): the fill frontier's late issue (--frontier-lead-us). staged_probe
# --timeline, 15 copies back to back per figure, the fill frontier with the lead 0 (issue at
# once, the rule before), 6 and 12 us, and the segment pipelines; two rounds alternated. Then
# staged_cuda_test's frontier variants (frontier_late: the lead 8 us), every copy's data checked.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "--frontier" "--frontier --frontier-lead-us 6" "--frontier --frontier-lead-us 12" ""; do
    echo "== round $round staged_probe --timeline [$cfg]"
    timeout 100 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 15 $cfg 2>&1 |
      grep -E "^== [0-9]|pinned  |dma-only|staged H2D|phases|MISMATCH" | grep -v "D2H" | cut -c1-240
  done
done
timeout 200 $B/staged_cuda_test --gtest_filter='*frontier*:*Frontier*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |error|Failure" | head -40
date -u
