#!/usr/bin/env bash
# Device run 11: options around the committed defaults, two alternated rounds (no code change):
# the plan's fill rate (60 and 40 GB/s instead of 49), device-to-host plans from 1 MiB with the
# drain rate of runs 2-4 (49.5), 32 KiB fill pieces, demoting fills from 256 KiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u
for i in 1 2; do
  for cfg in "" "--costs 5.8,88,60,71.4,91.3,3.2,52.7,52.7,2.5" "--costs 5.8,88,40,71.4,91.3,3.2,52.7,52.7,2.5" \
             "--plan-d2h-from 1M --costs 5.8,88,49,84,49.5,3.2,52.7,52.7,2.5" "--min-piece 32K" "--demote-from 256K"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 256K,1M,2M,4M,8M,16M,32M,64M --passes 7 $cfg > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
date -u
