#!/usr/bin/env bash
# Device run 2 (staged6): where a 1 and 4 MiB staged copy's time goes with the per-lane
# hand-off (timelines), then bench rounds alternating the plan's default costs (start 5.8 us)
# and the same costs with the start the hand-off now gives (1.0 us, run 1's --ceiling).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $B/staged_probe --timeline --sizes 1M,4M --copies 50
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run2-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run2-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "" "--costs 1,88,49,71.4,91.3,3.2,52.7,52.7,2.5"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,64M --passes 11 --nvbandwidth $OUT/run2-nvbw-256.json --nvbandwidth-size 256M $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -26
  done
done
date -u
