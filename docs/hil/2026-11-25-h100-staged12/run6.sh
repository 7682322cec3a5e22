#!/usr/bin/env bash
# Device run 6 (staged12): which part of the kernel's start handshake costs the SM copy (an
# experimental build, not committed: RESMEM_EXP_HANDSHAKE 0 none, 1 as committed, 2 without the
# system fence after the started word), all --sm-copy-upto 64M --sm-start-us 0, against the
# previous tree's binary; three alternated rounds, H2D 1-16 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for cfg in old 0 1 2; do
    exe=$P/resmem-gpu-exp; [ $cfg = old ] && exe=$P/resmem-gpu-3a91081
    RESMEM_EXP_HANDSHAKE=$cfg timeout 100 $exe bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M --passes 9 --overlap-blocks 0 --sm-copy-upto 64M $([ $cfg = old ] || echo --sm-start-us 0) > /tmp/bench.log 2>&1
    echo "== bench round $round [handshake $cfg] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
