#!/usr/bin/env bash
# Device run 6 (staged6): sleeping lanes on one futex instead of a condition variable. The
# lanes' wake-up after a 3 ms pause (staged_probe dispatch line; --handoff's asleep rows), both
# builds; then bench rounds alternating the condition-variable build (resmem-gpu.cv, 6e8ec73) and
# the futex build at 1 MiB-1 GiB: bench stamps each block on one thread before its copy, which
# takes longer than the lanes' 1 ms spin at 16 MiB and up, so those copies start with every
# lane asleep.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for p in staged_probe.cv staged_probe; do echo "== $p"; timeout 100 $B/$p --ceiling --sizes 1M | grep -E "dispatch"; done
$B/staged_probe --handoff --lanes 16 --copies 1000
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run6-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run6-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for bin in resmem-gpu.cv resmem-gpu; do
    timeout 120 $B/$bin bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run6-nvbw-256.json --nvbandwidth-size 256M > /tmp/bench.log 2>&1
    echo "== $i $bin rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
