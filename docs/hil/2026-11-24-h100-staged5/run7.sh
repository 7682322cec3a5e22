#!/usr/bin/env bash
# Device run 7: the defaults as committed (host to device planned up to 64 MiB, device to host
# from 64 MiB, built-in costs): the CUDA tests, the ceiling, nvbandwidth, three bench rounds
# alternated against equal segments (--plan-upto 0 --plan-d2h-from 0), every scenario file.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -11
timeout 120 $B/staged_probe --ceiling --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M --copies 21 > $OUT/run7-ceiling.log 2>&1; echo "== ceiling rc=$?"
grep -E "costs:|ceiling" $OUT/run7-ceiling.log
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run7-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run7-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "" "--plan-upto 0 --plan-d2h-from 0"; do
    json=""; [ $i = 2 ] && [ -z "$cfg" ] && json="--json $OUT/run7-bench.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 --nvbandwidth $OUT/run7-nvbw-256.json --nvbandwidth-size 256M $cfg $json > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -26
    [ $i = 2 ] && [ -z "$cfg" ] && cp /tmp/bench.log $OUT/run7-bench.log
  done
done
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run7-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run7-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run7-scenarios-cuda.log | head
date -u
