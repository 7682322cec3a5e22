#!/usr/bin/env bash
# Device run 12 (staged6): three more bench rounds of the final engine (built at 7a8b54e; the
# engine is unchanged since) over the staged curve, beside nvbandwidth, JSON of the last round.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run12-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run12-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3; do
  json=""; [ $i = 3 ] && json="--json $OUT/run12-bench.json"
  timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,256M,1G --passes 11 --nvbandwidth $OUT/run12-nvbw-256.json --nvbandwidth-size 256M $json > /tmp/bench.log 2>&1
  echo "== $i resmem-gpu rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -30
  [ $i = 3 ] && cp /tmp/bench.log $OUT/run12-bench.log
done
date -u
