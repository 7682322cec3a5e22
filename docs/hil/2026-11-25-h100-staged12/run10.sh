#!/usr/bin/env bash
# Device run 10 (staged12): the start decided by a warp of its own while the copying threads wait
# for and load their first piece (nothing stored before the verdict). The SM-copy tests, and two
# mutants that must fail them: waiting blocks that do not heed the verdict (a later, shorter copy
# never starts), copying threads that store without it (the abandoned kernel writes into its
# copy's buffer). Then bench: the previous tree (3a91081) --sm-copy-upto 64M, this tree by
# default, and the DMAs (--sm-copy-upto 0); three alternated rounds, H2D 1-64 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 $P/staged_cuda_test --gtest_filter='*SmCopy*:*UpToTheLimit*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
for m in nogo noverdict; do
  echo "== mutant $m (must fail)"
  timeout 30 $P/staged_cuda_test_mut_$m --gtest_filter='*SmCopyGoes*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:|Expected|Which|stayed|wrote" | head -8
  echo "rc=${PIPESTATUS[0]}"
done
for round in 1 2 3; do
  for cfg in "old --sm-copy-upto 64M" "new" "new --sm-copy-upto 0"; do
    set -- $cfg; bin=$1; shift
    exe=$P/resmem-gpu; [ $bin = old ] && exe=$P/resmem-gpu-3a91081
    timeout 100 $exe bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 "$@" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
