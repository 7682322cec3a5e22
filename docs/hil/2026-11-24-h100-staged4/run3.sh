#!/usr/bin/env bash
# Device run 3: the staged CUDA test on elastic lane runs; is the host disturbed (lane dispatch,
# steal time)? Then elastic (default now) against waiting for every lane, 16 KiB pieces, fewer
# lanes, alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u
$B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure|Expected|Which" | tail -8
head -1 /proc/stat; uptime; ps -eo pcpu,comm --sort=-pcpu | head -6
timeout 60 $B/staged_probe --timeline --sizes 1M,4M --copies 15 --min-piece 16K > $OUT/probe3.log 2>&1; echo "probe rc=$?"; cut -c1-600 $OUT/probe3.log
for i in 1 2; do
  for cfg in "--wait-all-lanes" "" "--min-piece 16K" "--min-piece 16K --lanes 12" "--min-piece 16K --lanes 8"; do
    out=$(timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
head -1 /proc/stat
date -u
