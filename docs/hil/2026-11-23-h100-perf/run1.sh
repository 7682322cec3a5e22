#!/usr/bin/env bash
# Device run 1 (issue 11): nvbandwidth beside the interleaved bench, then staged-path variants.
B=$(dirname "$0")
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv
for b in 256 16; do
  $B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b $b -i 7 -j > $OUT/nvbw-$b.json 2>&1
  python3 -c "import json,sys; d=json.load(open('$OUT/nvbw-$b.json'))['nvbandwidth']; print('nvbandwidth', d.get('version'), '-b $b:', [(t['name'], t.get('sum')) for t in d['testcases']])" || tail -5 $OUT/nvbw-$b.json
done
echo 2048 > /proc/sys/vm/nr_hugepages
t0=$(date +%s)
$B/resmem-gpu bench --backend cuda --sizes 64K,256K,1M,4M,16M,64M,256M --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench.json > $OUT/bench.log 2>&1
echo "bench rc=$? in $(( $(date +%s) - t0 )) s"; cat $OUT/bench.log
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/nvbw-256-after.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/nvbw-256-after.json'))['nvbandwidth']; print('nvbandwidth after bench -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for cfg in "" "--ramp-first 128K" "--ramp-first 256K" "--ramp-first 512K" "--ramp-first 256K --min-segments 16" "--min-segments 4" "--ramp-first 256K --cached-fill"; do
  out=$($B/resmem-gpu bench --backend cuda --paths staged --sizes 1M,4M,16M,64M,256M --passes 7 $cfg 2>&1)
  echo "== staged $cfg"; echo "$out" | awk '$1=="staged" || $1=="pinned" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6}'
done
