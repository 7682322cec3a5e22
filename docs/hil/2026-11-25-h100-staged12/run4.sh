#!/usr/bin/env bash
# Device run 4 (staged12): the fallback with equal segments where no plan is cached (the test's
# note, three times), and bench: the default (SM copy up to 16 MiB, start wait 20 us), the SM
# copy without the start wait (--sm-start-us 0: the decision written at launch), and the DMAs
# (--sm-copy-upto 0), three alternated rounds, pinned and staged, 1-64 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for i in 1 2 3; do
timeout 100 $P/staged_cuda_test --gtest_filter='*SmCopyGoes*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
done
for round in 1 2 3; do
  for cfg in "" "--sm-start-us 0" "--sm-copy-upto 0"; do
    tag=$(echo "${cfg:-default}" | tr -d ' -')
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg --json $OUT/run4-r$round-$tag.json > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
