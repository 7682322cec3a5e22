#!/usr/bin/env bash
# Device run 13: the final defaults (the plan's fill rate 60 GB/s): the CUDA tests, every
# scenario file, nvbandwidth, then three bench rounds alternating the defaults, the fill rate of
# runs 2-10 (49) and host-to-device plans at every size (--plan-upto 1G).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 180 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -3
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run13-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run13-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run13-scenarios-cuda.log | head
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run13-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run13-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "" "--costs 5.8,88,49,71.4,91.3,3.2,52.7,52.7,2.5" "--plan-upto 1G"; do
    json=""; [ $i = 2 ] && [ -z "$cfg" ] && json="--json $OUT/run13-bench.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 --nvbandwidth $OUT/run13-nvbw-256.json --nvbandwidth-size 256M $cfg $json > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -26
    [ $i = 2 ] && [ -z "$cfg" ] && cp /tmp/bench.log $OUT/run13-bench.log
  done
done
date -u
