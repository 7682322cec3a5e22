#!/usr/bin/env bash
# Device run 8 (staged11): dyn3 (dyn3.cu.txt) with and without the prewake (lane 0 records an
# event on the DMA stream as the copy starts, so the driver's first submission, slow after an
# idle gap, overlaps the lanes' first fill), back to back, after a 5 ms sleep before both the
# staged and the pinned copy, and behind 512 MiB of other writes. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run8.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for before in asleft idleboth evict; do
    for wake in none prewake; do
      echo "== round $round, source $before, $wake"
      timeout 100 $B/dyn3 15 11 0,3 heap $before hostalloc pause $wake | grep -v smaps
    done
  done
done
date -u
