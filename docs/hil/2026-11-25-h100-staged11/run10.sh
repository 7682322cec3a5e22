#!/usr/bin/env bash
# Device run 10 (staged11): run 9's bench of every path (1-64 MiB, 5 passes) was marked
# unreliable by its host check (an empty lane job took ~1 ms in 2 of 5 passes). Again, twice,
# alternating without and with --dma-source, to see whether the option or the host did it.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "" "--dma-source"; do
    timeout 200 $P/resmem-gpu bench --backend cuda --sizes 1M,4M,16M,64M --passes 5 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable" /tmp/bench.log | head -3
  done
done
date -u
