#!/usr/bin/env bash
# Device run 8 (staged7): where an SM-moved copy's time goes (staged_probe --timeline: kernel
# launched, every piece filled, returned) at 64 KiB-64 MiB, beside the DMA pipeline's timeline
# (--sm-copy-upto 0) at 1 and 4 MiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u
timeout 200 $B/staged_probe --timeline --sizes 64K,1M,4M,16M,64M --copies 50 2>&1 | grep -E "==|pinned |staged H2D|phases|data:" | cut -c1-240
timeout 100 $B/staged_probe --timeline --sizes 1M,4M --copies 50 --sm-copy-upto 0 2>&1 | grep -E "==|pinned |staged H2D|phases|data:" | cut -c1-240
date -u
