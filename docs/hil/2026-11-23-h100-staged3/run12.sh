#!/usr/bin/env bash
# Device run 12: D2H with the drain's CLDEMOTE (segments <= 2 MiB, 8 segments) against run 6's
# default (4 segments, no demote), alternated 3 times; then nvbandwidth and two bench runs of the
# whole curve as committed.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u
$B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure" | tail -5
for i in 1 2 3; do
  for cfg in "" "--min-segments-d2h 4 --demote-drain-upto 0"; do
    out=$($B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
$B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > $OUT/nvbw-256.json 2>&1
python3 -c "import json; d=json.load(open('$OUT/nvbw-256.json'))['nvbandwidth']; print('nvbandwidth -b 256:', [(t['name'], t.get('sum')) for t in d['testcases']])"
for r in a b; do
  $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench-$r.json > $OUT/bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|reference|took" $OUT/bench-$r.log
done
