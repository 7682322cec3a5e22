#!/usr/bin/env bash
# Device run 14: ramped segments (a small first one, each next twice as large) now that large
# segments are demoted instead of filled non-temporally; alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u
for i in 1 2; do
  for cfg in "" "--ramp-first 256K --min-segments 1" "--ramp-first 128K --min-segments 2" "--signals --min-segments 1" "--signals --min-segments 2 --edge-segment 128K"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
