#!/usr/bin/env bash
# Device run 17: the final tree again (3f5bf26, binaries of d7d8fe8): CUDA tests, every scenario file, nvbandwidth and two bench runs.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run17.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -8
timeout 200 $B/resmem run --backend cuda --json $OUT/run17-scenarios-cuda.json scenarios/ > $OUT/run17-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run17-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run17-scenarios-cuda.log | head
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run17-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run17-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for r in a b; do
  timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/run17-nvbw-256.json --nvbandwidth-size 256M --json $OUT/run17-bench-$r.json > $OUT/run17-bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|unreliable|reference|host check" $OUT/run17-bench-$r.log
done
date -u
