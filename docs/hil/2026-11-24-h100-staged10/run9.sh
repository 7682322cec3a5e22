#!/usr/bin/env bash
# Device run 9 (staged10): the fill frontier with the late issue at a 24 us lead against without,
# bench with and without --warm-cells, six alternated rounds, 9 passes, host to device (both
# directions run; the late issue changes host to device only).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3 4 5 6; do
  for cfg in "--frontier" "--frontier --frontier-lead-us 24" "--warm-cells --frontier" "--warm-cells --frontier --frontier-lead-us 24"; do
    timeout 60 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s%s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH" /tmp/bench.log | head -3
  done
done
date -u
