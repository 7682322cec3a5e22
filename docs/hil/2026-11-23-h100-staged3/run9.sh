#!/usr/bin/env bash
# Device run 9: CLDEMOTE fill as the default (segments >= 512 KiB) against the old default and
# variants, alternated twice, both ways.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u
for i in 1 2; do
  for cfg in "" "--demote-from 0" "--min-segments 4" "--demote-from 1M" "--buffers 8"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH|took/'
  done
done
