#!/usr/bin/env bash
# Device run 1 (staged6): the lanes' start through the new per-lane hand-off (staged_probe
# --handoff), the ceiling's costs with it, then bench rounds alternating the previous engine
# (resmem-gpu.old, 21450b4) and the new one.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/staged_probe --handoff --lanes 16 --copies 1000
timeout 150 $B/staged_probe --ceiling --sizes 1M,4M,16M,64M | grep -E "dispatch|costs|ceiling"
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run1-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run1-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for bin in resmem-gpu.old resmem-gpu; do
    timeout 100 $B/$bin bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,64M,256M --passes 11 --nvbandwidth $OUT/run1-nvbw-256.json --nvbandwidth-size 256M > /tmp/bench.log 2>&1
    echo "== $i $bin rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -26
  done
done
date -u
