#!/usr/bin/env bash
# Device run 12 (staged11): the final tree (8bf6ece: staged_probe's medians through the shared
# helper) once more: staged_probe --timeline --dump of the fill frontier, and bench --dma-source
# of the pinned and staged rows, two rounds each.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  echo "== staged_probe round $round"
  timeout 100 $P/staged_probe --timeline --dump --sizes 4M,16M --copies 9 --frontier 2>&1 |
    awk '/^== [0-9]/{print; p=0} /^  pinned  /{print substr($0,1,60)} /^  staged H2D/{print substr($0,1,60); p=1; next} p>=1 && /phases|its fill/{print; p++} p>2{p=0}'
  for cfg in "" "--dma-source"; do
    timeout 90 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable" /tmp/bench.log | head -2
  done
done
date -u
