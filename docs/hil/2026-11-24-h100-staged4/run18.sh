#!/usr/bin/env bash
# Device run 18: every scenario file on the final tree (885fea6), with nvbandwidth beside it to say
# what kind of host this call got.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run18.log") 2>&1
date -u
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/run18-nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/run18-nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for r in a b; do
  timeout 200 $B/resmem run --backend cuda --json $OUT/run18-scenarios-cuda-$r.json scenarios/ > $OUT/run18-scenarios-cuda-$r.log 2>&1
  echo "== scenarios $r rc=$?"; tail -1 $OUT/run18-scenarios-cuda-$r.log; grep -E "FAILED|ERROR" $OUT/run18-scenarios-cuda-$r.log | head
done
date -u
