#!/usr/bin/env bash
# Device run 6 (staged7): five bench rounds over the staged curve, alternating the SM copy for
# host-to-device copies up to 128 MiB (--sm-copy-upto 128M) with every copy through segment DMAs
# (--sm-copy-upto 0, the engine before), beside nvbandwidth; the JSON of the last SM round kept.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run6-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run6-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for i in 1 2 3 4 5; do
  for cfg in "--sm-copy-upto 128M" "--sm-copy-upto 0"; do
    json=""; [ $i = 5 ] && [ "$cfg" = "--sm-copy-upto 128M" ] && json="--json $OUT/run6-bench.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,256K,1M,2M,4M,8M,16M,32M,64M,128M,256M,1G --passes 11 --overlap-blocks 0 --nvbandwidth $OUT/run6-nvbw-256.json --nvbandwidth-size 256M $cfg $json > /tmp/bench.log 2>&1
    echo "== $i $cfg rc=$?"; awk '$1=="staged" || ($1=="pinned" && $3=="256") {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check|reference/' /tmp/bench.log | head -32
    [ -n "$json" ] && cp /tmp/bench.log $OUT/run6-bench.log
  done
done
date -u
