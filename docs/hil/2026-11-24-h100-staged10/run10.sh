#!/usr/bin/env bash
# Device run 10 (staged10): device-to-host single copies below 64 MiB (equal segments, the last
# drain overlapped by nothing): the falling ramp at the end (--d2h-tail 256K, 64K) and more
# segments (--min-segments-d2h 16) against the default, bench, eight alternated rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3 4 5 6 7 8; do
  for cfg in "" "--d2h-tail 256K" "--d2h-tail 64K" "--min-segments-d2h 16"; do
    timeout 60 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" && $2=="D2H" {printf "%s%s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH" /tmp/bench.log | head -3
  done
done
date -u
