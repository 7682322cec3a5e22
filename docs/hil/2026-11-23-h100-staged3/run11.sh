#!/usr/bin/env bash
# Device run 11: the staged CUDA test with a ring holding other data before each D2H copy; D2H
# variants (CLDEMOTE of the drained ring, non-temporal stores to the host), alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u
$B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure|Expected|Which" | tail -12
for i in 1 2; do
  for cfg in "" "--demote-drain" "--stream-to-host" "--demote-drain --min-segments-d2h 8"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
