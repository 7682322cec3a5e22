#!/usr/bin/env bash
# Device run 15: staged_probe --ceiling after the review's mend (the costs' start taken from the
# probe's dispatch figure instead of a second loop of empty jobs).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run15.log") 2>&1
timeout 120 $B/staged_probe --ceiling --sizes 1M,4M,16M,64M,256M --copies 21; echo "== ceiling rc=$?"
