#!/usr/bin/env bash
# Device run 2: per-segment timelines of the staged path both ways (the event pipeline now traces
# device to host too), then flag-only variants of segment count, piece size, CLDEMOTE threshold
# and ring depth at 1-16 MiB, alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u
$B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 15
echo "=== timeline --min-segments 2 --min-piece 16K"
$B/staged_probe --timeline --sizes 1M,4M --copies 15 --min-segments 2 --min-piece 16K
for i in 1 2; do
  for cfg in "" "--min-segments 2" "--min-segments 4" "--min-piece 16K" "--min-segments 4 --min-piece 16K" "--demote-from 64K" "--buffers 8" "--min-unit 128K --min-piece 16K"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
date -u
