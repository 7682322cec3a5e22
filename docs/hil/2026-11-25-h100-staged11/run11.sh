#!/usr/bin/env bash
# Device run 11 (staged11): runs 9 and 10 (every path) were marked unreliable by bench's host
# check (empty lane jobs of 1-3 ms) where run 6 (pinned and staged only) was not. Is it a path
# of bench itself? Two rounds of: every path; every path but staged-file (its disk file's
# writeback runs in kernel threads); every path but pageable; pinned and staged only.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ALL=pinned,pinned-wc,registered-direct,registered-chunked,staged,staged-file,zero-copy-mapped,pageable
for round in 1 2; do
  for paths in $ALL pinned,pinned-wc,registered-direct,registered-chunked,staged,zero-copy-mapped,pageable pinned,pinned-wc,registered-direct,registered-chunked,staged,staged-file,zero-copy-mapped pinned,staged; do
    timeout 200 $P/resmem-gpu bench --backend cuda --paths $paths --sizes 1M,4M,16M,64M --passes 5 --overlap-blocks 0 > /tmp/bench.log 2>&1
    echo "== round $round [$paths] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check" /tmp/bench.log | head -2
  done
done
date -u
