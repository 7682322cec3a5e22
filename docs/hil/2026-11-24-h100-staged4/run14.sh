#!/usr/bin/env bash
# Device run 14: do drains run slow inside a device-to-host copy because of the destination's
# cache state? Timelines with the destination zeroed by the probe thread before each copy (as
# before) against left as the lanes wrote it in the copy before; 1, 4, 16 MiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u
timeout 90 $B/staged_probe --timeline --sizes 1M,4M,16M --copies 21 > $OUT/run14-probe.log 2>&1; echo "probe rc=$?"
grep -E "dispatch|pinned|only|staged D2H|last copy|phases" $OUT/run14-probe.log | grep -v "fill:" | cut -c1-700
date -u
