#!/usr/bin/env bash
# Device run 1 (2026-11-24): DMAs from pinned memory spread over 1-4 copy streams (does a second
# stream hide each DMA's set-up?); then bench A/B of the staged path with --dma-streams 2/3 and
# smaller fill pieces against the default, alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u
nproc; grep -m1 "model name" /proc/cpuinfo
$B/staged_probe --streams-matrix --sizes 1M,4M,16M,64M --copies 15
for i in 1 2; do
  for cfg in "" "--dma-streams 2" "--dma-streams 3" "--dma-streams 2 --min-piece 16K"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" || $1=="pinned" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
date -u
