#!/usr/bin/env bash
# Device run 6 (staged11): bench --dma-source (each timed host-to-device copy's block written
# into the host memory by the GPU's copy engine first, as a capture card's DMA writes it)
# against the CPU-stamped default, for the segment pipelines (default), the fill frontier and
# the SM copy; three alternated rounds, 9 passes, 1-256 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for cfg in "" "--dma-source" "--frontier" "--frontier --dma-source" "--sm-copy-upto 64M" "--sm-copy-upto 64M --dma-source" "--warm-cells --frontier"; do
    timeout 90 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg --json /tmp/b.json > /tmp/bench.log 2>&1
    rc=$?
    echo "== bench round $round [${cfg:-default}] rc=$rc $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH|FAILED|dma-source|error" /tmp/bench.log | head -4
    [ "$round" = 1 ] && [ "$cfg" = "--dma-source" ] && cp /tmp/bench.log $OUT/run6-dma-source-round1.txt
  done
done
date -u
