#!/usr/bin/env bash
# Device run 12 (staged10): dyn2 (dyn2.cu.txt; nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler
# -mavx2,-mclwb,-mclflushopt,-pthread -cudart static, outside Bazel): the fill frontier stand-alone
# with the ring's lines written back (CLWB) or flushed (CLFLUSHOPT) after each unit, against
# CLDEMOTE (the engine), non-temporal and plain cached fills; the source as left (clean in the
# caches after the first copy) and rewritten in full before each copy. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run12.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for src in asleft rewrite; do
    echo "== round $round, source $src"
    timeout 200 $B/dyn2 15 11 0,1,2,3,4 heap $src
  done
done
date -u
