#!/usr/bin/env bash
# Device run 5 (staged6): run 4's host read host-to-device 256 MiB and 1 GiB lower with the new
# engine (78-80% against 87-88%) on a host whose lanes copied 33-45 GB/s: four more rounds
# alternating the previous engine (resmem-gpu.old) and this one at 16 MiB-1 GiB, and the
# driving-lane test at 100 copies.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 120 $B/staged_cuda_test --gtest_filter='*Driving*' 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -4
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run5-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run5-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3 4; do
  for bin in resmem-gpu.old resmem-gpu; do
    timeout 120 $B/$bin bench --backend cuda --paths pinned,staged --sizes 1M,16M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run5-nvbw-256.json --nvbandwidth-size 256M > /tmp/bench.log 2>&1
    echo "== $i $bin rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
