#!/usr/bin/env bash
# Device run 7 (staged6): what the lanes' wake-up costs a single copy in bench. bench stamps each
# block on one thread before its copy; from 16 MiB that takes longer than the lanes' 1 ms spin,
# so the copy starts with every lane asleep. Rounds alternating the default (--spin-us 1000) and
# lanes that spin through bench's own work (--spin-us 200000), the build of a6e8e14.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run7-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run7-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "" "--spin-us 200000"; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run7-nvbw-256.json --nvbandwidth-size 256M $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
