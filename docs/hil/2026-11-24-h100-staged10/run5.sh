#!/usr/bin/env bash
# Device run 5 (staged10): six alternated bench rounds (bench as a user runs it, 9 passes) of the
# segment pipelines (default), the fill frontier, the frontier with the late issue (lead 12 us),
# with 8 KiB units (its first DMA waits for fewer bytes per lane), and with 8 KiB units and no
# non-temporal fill for short copies. Sizes 1-64 MiB, both ways; every cell's data checked.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3 4 5 6; do
  for cfg in "" "--frontier" "--frontier --frontier-lead-us 12" "--frontier --frontier-unit 8K" "--frontier --frontier-unit 8K --nt-fill-below 0"; do
    timeout 60 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s%s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH" /tmp/bench.log | head -3
  done
done
date -u
