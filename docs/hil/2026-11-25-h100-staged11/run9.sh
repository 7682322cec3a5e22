#!/usr/bin/env bash
# Device run 9 (staged11): the final tree (27252a0: bench --dma-source, one median helper) on
# the H100: the CUDA backend's tests, the staged engine's GPU tests, every scenario file on the
# real CUDA runtime, and one bench round with --dma-source and --json (all paths, 1-64 MiB).
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 300 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
timeout 240 $P/resmem run --backend cuda scenarios/ > $OUT/run9-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run9-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run9-scenarios-cuda.log | cut -c1-200 | head
timeout 200 $P/resmem-gpu bench --backend cuda --sizes 1M,4M,16M,64M --passes 5 --overlap-blocks 0 --dma-source --json $OUT/run9-bench-dma-source.json > $OUT/run9-bench-dma-source.txt 2>&1
echo "== bench --dma-source rc=$?"; cat $OUT/run9-bench-dma-source.txt | head -60
date -u
