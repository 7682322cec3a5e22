#!/usr/bin/env bash
# Device run 9 (staged6): the final tree (7a8b54e): the CUDA tests, every scenario file twice,
# the lanes' hand-off, nvbandwidth, then bench rounds alternating the previous engine
# (resmem-gpu.old, 21450b4) and this one over the staged curve, the JSON of the last round kept.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
for k in 1 2; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run9-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run9-scenarios-cuda-$k.log; grep -E "FAILED|ERROR|overlap" $OUT/run9-scenarios-cuda-$k.log | head
done
$B/staged_probe --handoff --lanes 16 --copies 1000
timeout 150 $B/staged_probe --ceiling --sizes 1M,2M,4M,8M,16M,64M,256M | grep -E "dispatch|costs|ceiling"
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run9-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run9-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2; do
  for bin in resmem-gpu.old resmem-gpu; do
    json=""; [ $i = 2 ] && [ $bin = resmem-gpu ] && json="--json $OUT/run9-bench.json"
    timeout 120 $B/$bin bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run9-nvbw-256.json --nvbandwidth-size 256M $json > /tmp/bench.log 2>&1
    echo "== $i $bin rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -30
    [ $i = 2 ] && [ $bin = resmem-gpu ] && cp /tmp/bench.log $OUT/run9-bench.log
  done
done
date -u
