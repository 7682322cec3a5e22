#!/usr/bin/env bash
# Device run 4 (staged8): the segment DMA pipeline's per-segment timelines (staged_probe
# --timeline, whole output) at 4, 16 and 64 MiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 30 2>&1
date -u
