#!/usr/bin/env bash
# Device run 7 (staged13): device-to-host single copies of 4 and 16 MiB, the direction furthest
# under its ceiling (run 1: 70.8-73.2% and 77.7-85.6% of pinned against a best cut of 89.4% and
# 93.7%). Run 2's plan from 4 MiB read 4 MiB at 43-50%: its 2.48 MiB first segment is past
# --demote-drain-upto (2 MiB), so its ring lines stay in the lanes' caches for the next DMA
# (staged3: 4 MiB D2H 40% without the demote). Four alternated rounds, pinned and staged:
#   default     8 equal segments of 512 KiB / 2 MiB, demoted
#   plan        --plan-d2h-from 4M --demote-drain-upto 8M (the default costs)
#   planh200    the same on run 1's costs of an H200 host
#   seg4        --min-segments-d2h 4 --demote-drain-upto 8M
#   tail        --d2h-tail 256K (the last segment cut into a falling ramp)
#   seg16       --min-segments-d2h 16
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
C=0.73,91.4,96.5,87.9,105.8,1.65,52.9,50.2,2.5
for round in 1 2 3 4; do
  for cfg in default plan planh200 seg4 tail seg16; do
    case $cfg in
      default) a=();;
      plan) a=(--plan-d2h-from 4M --demote-drain-upto 8M);;
      planh200) a=(--plan-d2h-from 4M --demote-drain-upto 8M --costs $C);;
      seg4) a=(--min-segments-d2h 4 --demote-drain-upto 8M);;
      tail) a=(--d2h-tail 256K);;
      seg16) a=(--min-segments-d2h 16);;
    esac
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M --passes 9 --overlap-blocks 0 "${a[@]}" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|^error" /tmp/bench.log | cut -c1-160 | head -2
  done
done
date -u
