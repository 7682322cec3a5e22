#!/usr/bin/env bash
# Device run 1 (staged7): the staged CUDA tests with host-to-device copies up to 64 MiB moved by
# the reworked piece kernel (the new default), then bench rounds alternating it with
# --sm-copy-upto 0 (every copy through segment DMAs, the engine before), beside nvbandwidth.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  (PASSED|FAILED|  OK|SKIPPED) |FAILED|note:|Failure|Expected|Which is|actual" | head -40
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run1-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run1-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "" "--sm-copy-upto 0"; do
    timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,128M,256M --passes 11 --nvbandwidth $OUT/run1-nvbw-256.json --nvbandwidth-size 256M $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -30
  done
done
date -u
