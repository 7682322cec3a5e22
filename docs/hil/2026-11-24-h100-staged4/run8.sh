#!/usr/bin/env bash
# Device run 8: the committed tree (0de4a41): the staged CUDA test, nvbandwidth at 256 MiB, then
# two bench runs of the whole curve (pinned, staged, registered-direct) checked against it.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure" | tail -6
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for r in a b; do
  timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench-$r.json > $OUT/bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned|registered)|UNRELIABLE|reference|took" $OUT/bench-$r.log
done
date -u
