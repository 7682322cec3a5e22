#!/usr/bin/env bash
# Device run 6: the lanes' rate beside DMAs timed to their last piece (run 5 counted lane 0's
# DMA still running after it), the ceiling from those costs, then bench rounds alternating the
# default plans (the built-in costs), plans from the costs just measured, and equal segments.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u
timeout 120 $B/staged_probe --ceiling --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --copies 21 > $OUT/run6-ceiling.log 2>&1; echo "== ceiling rc=$?"
cat $OUT/run6-ceiling.log
measured=$(grep "^costs:" $OUT/run6-ceiling.log | sed 's/.*--costs //')
echo "measured costs: $measured"
for i in 1 2 3; do
  for cfg in "" "--costs $measured --plan-upto 1G --plan-d2h-upto 1G" "--plan-upto 0 --plan-d2h-upto 0"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 $cfg > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
date -u
