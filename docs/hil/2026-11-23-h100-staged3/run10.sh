#!/usr/bin/env bash
# Device run 10: the staged path as committed (D2H in 4 segments, segments >= 512 KiB filled
# through the cache and CLDEMOTEd): CUDA tests, nvbandwidth, two bench runs of the whole curve,
# the probe's queue runs (CopyQueue of 16 MiB blocks).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure" | tail -6
for b in 256 16; do
  $B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b $b -i 7 -j > $OUT/nvbw-$b.json 2>&1
  python3 -c "import json; d=json.load(open('$OUT/nvbw-$b.json'))['nvbandwidth']; print('nvbandwidth -b $b:', [(t['name'], t.get('sum')) for t in d['testcases']])" || tail -5 $OUT/nvbw-$b.json
done
for r in a b; do
  $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench-$r.json > $OUT/bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|reference|took" $OUT/bench-$r.log
done
timeout 200 $B/staged_probe --host memfd --sizes 16M --copies 10 --blocks 300 2>&1 | grep -E "^queue|^data|^== "
