#!/usr/bin/env bash
# Device run 13 (staged11): the staged curve of the final tree (8bf6ece's resmem-gpu), 64 KiB to
# 256 MiB, both directions, three bench rounds (pinned and staged, 9 passes), each round's JSON
# kept.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  timeout 150 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 --json $OUT/run13-bench-$round.json > /tmp/bench.log 2>&1
  echo "== bench round $round rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
  grep -E "^host check|^unreliable" /tmp/bench.log | head -2
done
date -u
