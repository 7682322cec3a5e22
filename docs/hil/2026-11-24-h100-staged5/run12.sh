#!/usr/bin/env bash
# Device run 12: the plan's fill rate beside DMAs swept (49 = the committed default; 55-80),
# three alternated rounds (run 11: 60 beat 49 by 2-5 points from 1 MiB in both rounds).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u
for i in 1 2 3; do
  for f in 49 55 60 65 70 80; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 256K,1M,2M,4M,8M,16M,32M,64M --passes 7 --costs 5.8,88,$f,71.4,91.3,3.2,52.7,52.7,2.5 > /tmp/bench.log 2>&1
    echo "== $i staged fill $f rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
date -u
