#!/usr/bin/env bash
# Device run 7: A/B of the non-temporal tail (default) against --no-nt-tail, alternated 3 times.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u
for i in 1 2 3; do
  for cfg in "" "--no-nt-tail"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-nt-tail}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
