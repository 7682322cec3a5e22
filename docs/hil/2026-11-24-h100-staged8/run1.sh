#!/usr/bin/env bash
# Device run 1 (staged8): the spread of staged copies (median against mean, p90, max) in
# staged_probe --timeline, SM copy and segment DMAs, and two bench rounds of each at 1-64 MiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "--sm-copy-upto 64M" "--sm-copy-upto 0"; do
  echo "== staged_probe $cfg"
  timeout 150 $B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 60 $cfg 2>&1 | grep -E "==|pinned |staged H|phases|MISMATCH" | cut -c1-300
done
for i in 1 2; do
  for cfg in "--sm-copy-upto 64M" "--sm-copy-upto 0"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 11 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i $cfg rc=$?"; awk '$1=="staged" || $1=="pinned" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
