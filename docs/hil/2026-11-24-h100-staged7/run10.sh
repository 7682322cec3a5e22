#!/usr/bin/env bash
# Device run 10 (staged7): the final tree (d0212cc; the engine as of 8e4a45c plus staged_probe's
# SM phases): the CUDA tests, every scenario file twice, one bench round over the staged curve.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
for k in 1 2; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run10-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run10-scenarios-cuda-$k.log; grep -E "FAILED|ERROR" $OUT/run10-scenarios-cuda-$k.log | head
done
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run10-nvbw-256.json 2>&1
timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run10-nvbw-256.json --nvbandwidth-size 256M --json $OUT/run10-bench.json > $OUT/run10-bench.log 2>&1
echo "== 1 default rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' $OUT/run10-bench.log | head -30
date -u
