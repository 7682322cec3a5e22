#!/usr/bin/env bash
# Device run 13 (staged8): the fill frontier against the segment pipelines (--no-frontier) with
# the lanes asleep at a copy's start (staged_probe: back to back, and a 3 ms pause between).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for k in 1 2; do
for cfg in "" "--no-frontier"; do
  echo "== staged_probe [$cfg]"
  timeout 150 $B/staged_probe --sizes 4M,16M,64M --copies 20 $cfg 2>&1 | grep -E "^==|pinned |back to back|3 ms pause|phases" | grep -v "spin 20" | cut -c1-400
done
done
date -u
