#!/usr/bin/env bash
# Device run 8: does CLDEMOTE after a cached fill let the DMA read the ring from the LLC?
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u; grep -m1 "model name" /proc/cpuinfo; grep -m1 -o -w "cldemote" /proc/cpuinfo || echo "no cldemote flag"; lscpu | grep -E "L3|NUMA node\(s\)|Socket"
for i in 1 2; do
  for cfg in "" "--cached-fill --demote-fill" "--cached-fill" "--demote-fill"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
