#!/usr/bin/env bash
# Device run 6 (staged9): bench with --warm-cells (one untimed copy of the same path and size
# before each cell's timed copies) against without, the segment pipelines and the fill frontier,
# alternated, two rounds: bench's figures when each copy follows one of its own.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "--warm-cells" "" "--warm-cells --frontier" "--frontier"; do
    timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== round $round bench [$cfg] rc=$?"
    awk '($1=="staged" || ($1=="pinned" && $4=="MiB" && $3=="16")) {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|warm-cells/' /tmp/bench.log | head -20
  done
done
date -u
