#!/usr/bin/env bash
# Device run 2 (staged8): the SM copy on 32 blocks (the new default of --sm-blocks) against 132
# (every SM, the kernel before): CUDA tests, staged_probe timelines, three alternated bench rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|Expected|Which|actual" | tail -8
timeout 300 $B/staged_cuda_test 2>&1 | grep -E "^\[       OK|^\[  PASSED|^\[  FAILED|Failure|Expected|Which|actual|skipped" | tail -30
for blocks in 32 132; do
  echo "== staged_probe --sm-blocks $blocks"
  timeout 100 $B/staged_probe --timeline --sizes 1M,4M,16M,64M --copies 40 --sm-copy-upto 64M --sm-blocks $blocks 2>&1 | grep -E "^==|pinned |staged H2D|phases: kernel|MISMATCH" | cut -c1-330
done
for i in 1 2 3; do
  for blocks in 32 132; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 11 --overlap-blocks 0 --sm-copy-upto 64M --sm-blocks $blocks > /tmp/bench.log 2>&1
    echo "== bench $i --sm-blocks $blocks rc=$?"; awk '($1=="staged" || $1=="pinned") && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
