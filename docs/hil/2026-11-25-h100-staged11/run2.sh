#!/usr/bin/env bash
# Device run 2 (staged11): hyb (hyb.cu.txt; nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler
# -mavx2,-pthread -cudart static, outside Bazel): host-to-device staged copies whose head
# (0-4 MiB, or all of it) goes through the SMs and whose rest by fill-frontier DMAs, alternated
# with pinned cudaMemcpy. Three rounds of 32 SM blocks, one of 132.
B=$(dirname "$0")
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do echo "== round $round"; timeout 120 $B/hyb 15 11 32 1; done
echo "== round 4, 132 blocks"; timeout 120 $B/hyb 15 11 132 1
date -u
