#!/usr/bin/env bash
# Device run 8 (staged8): host-to-device single copies with DMAs sized by the fill frontier (the
# new default): the CUDA tests, staged_probe timelines, and three alternated bench rounds against
# the segment pipelines (--no-frontier) and the opt-in SM copy.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[       OK|^\[  PASSED|^\[  FAILED|Failure|Expected|Which|actual|skipped|crosses" | tail -40
timeout 100 $B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 30 2>&1 | grep -E "^==|pinned |staged H2D|phases|fill:" | grep -B1 -A2 "staged H2D" | cut -c1-1500
for i in 1 2 3; do
  for cfg in "" "--no-frontier" "--sm-copy-upto 64M"; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
