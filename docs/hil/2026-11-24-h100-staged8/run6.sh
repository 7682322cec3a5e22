#!/usr/bin/env bash
# Device run 6 (staged8): device-to-host single copies below 64 MiB. Run 4's 4 MiB timeline: the
# DMAs of eight 512 KiB segments done every ~11.5 us, each drained ~10.5 us after (50 GB/s), the
# last drain exposed. Cuts that end small: plans from 1 MiB (default costs; the drain run 4 saw,
# 50 GB/s), and the falling ramp of --d2h-tail. staged_probe timelines, then three alternated
# bench rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
C50="--costs 1,88,49,50,50,3.2,52.7,52.7,2.0"
for cfg in "" "--plan-d2h-from 1M" "--plan-d2h-from 1M $C50" "--d2h-tail 64K"; do
  echo "== staged_probe [$cfg]"
  timeout 60 $B/staged_probe --timeline --sizes 1M,4M,16M --copies 30 $cfg 2>&1 | grep -E "^==|pinned |staged D2H host not|phases|drain:" | grep -A3 "host not cleared" | cut -c1-1000
done
for i in 1 2 3; do
  for cfg in "" "--plan-d2h-from 1M" "--plan-d2h-from 1M $C50" "--d2h-tail 64K"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,32M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="D2H" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
