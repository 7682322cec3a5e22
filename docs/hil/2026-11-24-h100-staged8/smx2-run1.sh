#!/usr/bin/env bash
# smx2-run1 (staged8): smx2.cu.txt (built with nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler
# -mavx2,-pthread, outside Bazel) on the H100: the piece kernel on 8-132 blocks; a kernel reading
# part of a ready ring beside a pinned DMA of the rest; what an SM copy of 132, 32 and 16 blocks
# costs a program's kernel beside it. Exactly the command of that call:
mkdir -p $OUT; B=.carry/perf/smx2; nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader; (timeout 150 $B 15 9 0 blocks; timeout 100 $B 15 9 0 concurrent; timeout 100 $B 15 9 0 cost 132 512 4; timeout 100 $B 15 9 0 cost 32 512 4; timeout 100 $B 15 9 0 cost 16 1024 8) 2>&1 | tee $OUT/smx2-run1.log
