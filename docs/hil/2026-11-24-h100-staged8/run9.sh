#!/usr/bin/env bash
# Device run 9 (staged8): the fill frontier with the driving lane filling only before its first
# DMA (the default now) against never (--no-driver-fill) and 16 KiB units; the stand-alone shape
# (dyn, 32 KiB units) beside it for this host; then two alternated bench rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/dyn 15 11 1 2>&1 | grep -E "==|dyn"
for cfg in "" "--no-driver-fill" "--frontier-unit 16K --frontier-min-dma 128K"; do
  echo "== staged_probe [$cfg]"
  timeout 100 $B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 30 $cfg 2>&1 | grep -E "^==|pinned |staged H2D|phases|fill:" | grep -B1 -A2 "staged H2D" | cut -c1-900 | sed 's/(mean.*two queued))//'
done
for i in 1 2; do
  for cfg in "" "--no-frontier" "--no-driver-fill"; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
