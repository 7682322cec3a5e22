#!/usr/bin/env bash
# Device run 10: bench with its host check (an empty job on the 16 staging lanes, timed before
# every pass) beside nvbandwidth, twice, on the committed defaults.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run10-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run10-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for r in a b; do
  timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/run10-nvbw-256.json --nvbandwidth-size 256M --json $OUT/run10-bench-$r.json > $OUT/run10-bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|unreliable|reference|host check" $OUT/run10-bench-$r.log
done
date -u
