#!/usr/bin/env bash
# Device run 8 (staged12): the start as committed (the first block leads: started word, system
# fence, one read of the CPU's intent; the other blocks wait for its verdict in device memory).
# The SM-copy tests twice, then bench: the previous tree (3a91081) --sm-copy-upto 64M, this tree
# by default (SM copy up to 16 MiB, start wait 20 us), --sm-copy-upto 64M, and the DMAs
# (--sm-copy-upto 0); three alternated rounds, pinned and staged, H2D and D2H 1-64 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2; do
timeout 100 $P/staged_cuda_test --gtest_filter='*SmCopy*:*UpToTheLimit*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
done
for round in 1 2 3; do
  for cfg in "old --sm-copy-upto 64M" "new" "new --sm-copy-upto 64M" "new --sm-copy-upto 0"; do
    set -- $cfg; bin=$1; shift
    exe=$P/resmem-gpu; [ $bin = old ] && exe=$P/resmem-gpu-3a91081
    tag=$(echo "$cfg" | tr -d ' -')
    timeout 100 $exe bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 "$@" --json $OUT/run8-r$round-$tag.json > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
