#!/usr/bin/env bash
# Device run 3 (staged11): on one machine, bench's staged copies three ways, alternated, three
# rounds (9 passes, host to device and device to host, 1-64 MiB): the default (segment
# pipelines), the SM copy up to 64 MiB (--sm-copy-upto 64M), and the fill frontier with warm
# cells; then hyb (run 2's stand-alone) once, 32 blocks.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for cfg in "" "--sm-copy-upto 64M" "--frontier --warm-cells"; do
    timeout 90 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH|pinned +H2D +16" /tmp/bench.log | head -3
  done
done
echo "== hyb"; timeout 120 $B/hyb 15 11 32 1
date -u
