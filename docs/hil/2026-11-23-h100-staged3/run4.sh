#!/usr/bin/env bash
# Device run 2: per-segment timelines of staged copies, signals vs event polling, both ways.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u
timeout 200 $B/staged_probe --host memfd --sizes 1M,4M,16M,64M --copies 20 --focus --dump 2>&1
