#!/usr/bin/env bash
# dyn-run1 to 3 (staged8): dyn.cu.txt (nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler -mavx2,-pthread,
# outside Bazel), host-to-device staged copies with DMAs sized by the fill frontier, stand-alone,
# against pinned cudaMemcpy alternated with them. The commands of the three calls:
#   dyn-run1: the first list of shapes (non-temporal and cached+CLDEMOTE fills, 64-256 KiB units;
#             each line of the log names its shape); dyn.cu.txt holds the second list.
mkdir -p $OUT; timeout 300 .carry/perf/dyn 15 11 2>&1 | tee $OUT/dyn-run1.log
#   dyn-run2: the second list (cached+CLDEMOTE, 16-64 KiB units, 128-512 KiB smallest DMAs,
#             one to three DMAs queued, a cached fill without CLDEMOTE).
mkdir -p $OUT; timeout 300 .carry/perf/dyn 15 11 2>&1 | tee $OUT/dyn-run2.log
#   dyn-run3: shapes 1 and 0 of the second list from three sources (a THP heap, a memfd, a heap
#             without THP).
mkdir -p $OUT; (for k in heap memfd nothp; do timeout 100 .carry/perf/dyn 15 11 1,0 $k; done) 2>&1 | grep -E "source|==|dyn" | tee $OUT/dyn-run3.log
