#!/usr/bin/env bash
# Device run 3 (staged6): claim groups. The staged CUDA tests (every pipeline, 1 and 16 groups
# too), a 1 MiB / 4 MiB timeline with the default 4 groups, then bench rounds alternating
# --claim-groups 1 (one counter per segment, as before), the default 4, and 8.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -18
timeout 100 $B/staged_probe --timeline --sizes 1M,4M --copies 50 | grep -E "==|pinned|staged|phases"
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run3-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run3-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "--claim-groups 1" "" "--claim-groups 8"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,64M --passes 11 --nvbandwidth $OUT/run3-nvbw-256.json --nvbandwidth-size 256M $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -26
  done
done
date -u
