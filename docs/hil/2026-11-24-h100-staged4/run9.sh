#!/usr/bin/env bash
# Device run 9: ramps at the copy's exposed ends of large copies: host to device a small first
# segment doubling up (--ramp-first), device to host a falling ramp for the last segment
# (--d2h-tail); the CUDA test (with the tail variant) first; bench A/B alternated three times.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure|Expected|Which" | tail -8
for i in 1 2 3; do
  for cfg in "" "--d2h-tail 1M --ramp-first 1M" "--d2h-tail 512K --ramp-first 512K" "--d2h-tail 2M --ramp-first 2M"; do
    out=$(timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default} rc=$?"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH|rror/' | head -14
  done
done
date -u
