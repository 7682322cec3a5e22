#!/usr/bin/env bash
# Device run 2 (staged13): can 4 and 16 MiB reach 90% of pinned on the H200 host with what the
# engine already has? Run 1's ceiling (staged_probe --ceiling) put the best segment plan of this
# host's measured costs at H2D 4 MiB 88.0%, 16 MiB 93.3%, D2H 4 MiB 89.4%, 16 MiB 93.7%, while
# bench read H2D 16 MiB 86.7-87.7 (SMs) and D2H 16 MiB 77.7-85.6 (equal segments). Four
# alternated rounds, pinned and staged, 4-64 MiB both ways:
#   default
#   h200plan   the plans made from this host's costs, device to host from 4 MiB, host to device
#              by the DMAs (--sm-copy-upto 0)
#   h200d2h    the SM copy host to device (default), device to host planned from 4 MiB
#   slowfill   as h200plan with the fill beside DMAs taken as 60 GB/s (staged8 run 5: a plan
#              from 90 GB/s doubled its segments faster than the lanes filled them)
#   sm64       --sm-copy-upto 64M
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
C=0.73,91.4,96.5,87.9,105.8,1.65,52.9,50.2,2.5
S=0.73,91.4,60,87.9,105.8,1.65,52.9,50.2,2.5
for round in 1 2 3 4; do
  for cfg in default h200plan h200d2h slowfill sm64; do
    case $cfg in
      default) a=();;
      h200plan) a=(--costs $C --plan-d2h-from 4M --sm-copy-upto 0);;
      h200d2h) a=(--costs $C --plan-d2h-from 4M);;
      slowfill) a=(--costs $S --plan-d2h-from 4M --sm-copy-upto 0);;
      sm64) a=(--sm-copy-upto 64M);;
    esac
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M --passes 9 --overlap-blocks 0 "${a[@]}" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|went by DMAs|^error" /tmp/bench.log | cut -c1-160 | head -3
  done
done
date -u
