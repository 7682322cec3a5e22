#!/usr/bin/env bash
# Device run 9 (staged7): the resident piece kernel (--sm-linger-us): the staged CUDA tests
# (with the resident variants), then bench rounds alternating --sm-linger-us 1000 with the
# default (a launch per copy), beside nvbandwidth.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  (PASSED|FAILED|  OK|SKIPPED) |FAILED|note:|Failure|Expected|Which is|actual|copy " | head -40
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run9-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run9-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  for cfg in "--sm-linger-us 1000" ""; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M --passes 11 --overlap-blocks 0 --nvbandwidth $OUT/run9-nvbw-256.json --nvbandwidth-size 256M $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
