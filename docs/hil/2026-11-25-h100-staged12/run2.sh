#!/usr/bin/env bash
# Device run 2 (staged12): where the fallback's time goes (the test's note), and bench: the
# new default (SM copy up to 16 MiB) against --sm-copy-upto 0 (the old default), three
# alternated rounds, pinned and staged, 1-64 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 100 $P/staged_cuda_test --gtest_filter='*SmCopyGoes*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
for round in 1 2 3; do
  for cfg in "" "--sm-copy-upto 0"; do
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg --json $OUT/run2-r$round${cfg:+-off}.json > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|went by DMAs" /tmp/bench.log | head -3
  done
done
date -u
