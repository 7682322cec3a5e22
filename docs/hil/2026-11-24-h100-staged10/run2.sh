#!/usr/bin/env bash
# Device run 2 (staged10): bench, the fill frontier with the late issue (--frontier-lead-us 12)
# against without (issue at once), with --warm-cells and without, one round (run with ROUND=N).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2-${ROUND:-1}.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "--warm-cells --frontier" "--warm-cells --frontier --frontier-lead-us 12" "--frontier" "--frontier --frontier-lead-us 12"; do
  timeout 140 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
  echo "== round ${ROUND:-1} bench [$cfg] rc=$?"
  awk '($1=="staged" || $1=="pinned") {printf "  %s %s %s %s %s %s\n", $1, $2, $3$4, $5, $6, $7} /UNRELIABLE|unreliable|MISMATCH|warm-cells/' /tmp/bench.log | head -24
done
date -u
