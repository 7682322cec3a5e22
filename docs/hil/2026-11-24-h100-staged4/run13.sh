#!/usr/bin/env bash
# Device run 13: the final tree (2a60c07): the CUDA tests, every scenario file twice, one bench run
# with nvbandwidth beside it and the host check.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -7
for r in a b; do
  timeout 200 $B/resmem run --backend cuda --json $OUT/run13-scenarios-cuda-$r.json scenarios/ > $OUT/run13-scenarios-cuda-$r.log 2>&1
  echo "== scenarios $r rc=$?"; tail -1 $OUT/run13-scenarios-cuda-$r.log
  grep -E "FAILED|ERROR" $OUT/run13-scenarios-cuda-$r.log | head -10
done
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run13-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run13-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/run13-nvbw-256.json --nvbandwidth-size 256M --json $OUT/run13-bench.json > $OUT/run13-bench.log 2>&1
echo "== bench rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|unreliable|reference|host check" $OUT/run13-bench.log
date -u
