#!/usr/bin/env bash
# Device run 14 (staged12; run 13 again on another machine, run 13's host was disturbed): the final tree (2e3781c): the CUDA backend's tests, the staged
# engine's GPU tests, every scenario file on the CUDA runtime, and bench: the default (SM copy up
# to 16 MiB host to device, start wait 20 us) against the DMAs (--sm-copy-upto 0), three
# alternated rounds, pinned and staged, both ways, 1-256 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run14.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 200 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
timeout 240 $P/resmem run --backend cuda scenarios/ > $OUT/run14-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run14-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run14-scenarios-cuda.log | cut -c1-200 | head
for round in 1 2 3; do
  for cfg in "" "--sm-copy-upto 0"; do
    tag=$(echo "${cfg:-default}" | tr -d ' -')
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg --json $OUT/run14-r$round-$tag.json > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|went by DMAs" /tmp/bench.log | cut -c1-150 | head -3
  done
done
date -u
