#!/usr/bin/env bash
# Device run 9 (staged12): the SM copy's piece and block count by bench: the default (32 KiB
# pieces, 32 blocks) against 16, 64 and 128 KiB pieces and 64 blocks; two alternated rounds,
# pinned and staged, H2D 1-16 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "" "--sm-piece 16K" "--sm-piece 64K" "--sm-piece 128K" "--sm-blocks 64" "--sm-piece 64K --sm-blocks 64"; do
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
