#!/usr/bin/env bash
# Device run 15 (staged12): are 64 and 256 MiB copies (DMAs in both) slower in the default
# configuration because 16 MiB SM copies run before them in each pass? bench 16-256 MiB, the
# default against --sm-copy-upto 0, and 64-256 MiB alone by default (no SM copy in the run);
# four alternated rounds, pinned and staged, both ways.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run15.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3 4; do
  for cfg in "16M,64M,256M" "16M,64M,256M --sm-copy-upto 0" "64M,256M"; do
    set -- $cfg; sizes=$1; shift
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes $sizes --passes 9 --overlap-blocks 0 "$@" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
