#!/usr/bin/env bash
# Device run 5 (staged12): is the SM copy slower in this tree? The previous tree's binary
# (3a91081, no start handshake) against this one, both --sm-copy-upto 64M, this one with and
# without the start wait, and the DMAs; three alternated rounds, pinned and staged, H2D 1-16 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for cfg in "old --sm-copy-upto 64M" "new --sm-copy-upto 64M" "new --sm-copy-upto 64M --sm-start-us 0" "new --sm-copy-upto 0"; do
    set -- $cfg; bin=$1; shift
    exe=$P/resmem-gpu; [ $bin = old ] && exe=$P/resmem-gpu-3a91081
    timeout 100 $exe bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M --passes 9 --overlap-blocks 0 "$@" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
for i in 1 2; do
  timeout 60 $P/staged_probe --timeline --sizes 1M --copies 15 --sm-copy-upto 64M 2>&1 | grep -E "pinned  |staged H2D|phases" | cut -c1-200
done
date -u
