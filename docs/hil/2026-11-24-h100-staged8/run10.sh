#!/usr/bin/env bash
# Device run 10 (staged8): the fill frontier with the driving lane filling whenever no DMA runs,
# against the segment pipelines (--no-frontier): three alternated bench rounds, and staged_probe
# timelines.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3; do
  for cfg in "" "--no-frontier"; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
timeout 100 $B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 30 2>&1 | grep -E "^==|pinned |staged H2D|phases|fill:" | grep -B1 -A2 "staged H2D" | cut -c1-900 | sed 's/(mean.*two queued))//'
date -u
