#!/usr/bin/env bash
# Device run 5: the ceiling with the copy engine's rate beside the lanes measured too (lane 0
# times the 4 MiB DMAs that finish while the lanes copy 16 MiB), twice, then one bench of the
# current defaults to set beside it.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u
for i in 1 2; do
  timeout 120 $B/staged_probe --ceiling --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --copies 21 > /tmp/c.log 2>&1; echo "== ceiling $i rc=$?"; cat /tmp/c.log
done
timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 --json $OUT/run5-bench.json > /tmp/bench.log 2>&1
echo "== bench rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
date -u
