#!/usr/bin/env bash
# Device run 16 (staged8): does bench separate the fill frontier from the segment pipelines when
# the lanes spin through bench's own work (--spin-us 200000), so no copy starts with them asleep?
# Three alternated rounds of each, with and without the long spin.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run16.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3; do
  for cfg in "--frontier --spin-us 200000" "--spin-us 200000" "--frontier" ""; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
