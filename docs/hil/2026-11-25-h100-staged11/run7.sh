#!/usr/bin/env bash
# Device run 7 (staged11): dyn3 (dyn3.cu.txt) after a 5 ms sleep of the caller before each
# staged copy only ("idle", run 5's) or before each staged and each pinned copy ("idleboth"),
# against copies back to back ("asleft"). CLDEMOTE and non-temporal fills. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for before in asleft idle idleboth; do
    echo "== round $round, source $before"
    timeout 100 $B/dyn3 15 11 0,3 heap $before hostalloc | grep -v smaps
  done
done
date -u
