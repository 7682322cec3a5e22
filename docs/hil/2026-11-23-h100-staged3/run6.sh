#!/usr/bin/env bash
# Device run 6 (issue 11, 2026-11-23 night): the staged path as merged (D2H in 4 segments,
# non-temporal fill of a block's last segments): its CUDA tests, nvbandwidth, two interleaved
# bench runs of the whole curve, and the probe's timelines at 16 MiB.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/cuda_gpu_test --gtest_brief=1 2>&1 | tail -5
$B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure|error" | tail -8
for b in 256 16; do
  $B/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b $b -i 7 -j > $OUT/nvbw-$b.json 2>&1
  python3 -c "import json; d=json.load(open('$OUT/nvbw-$b.json'))['nvbandwidth']; print('nvbandwidth -b $b:', [(t['name'], t.get('sum')) for t in d['testcases']])" || tail -5 $OUT/nvbw-$b.json
done
for r in a b; do
  t0=$(date +%s)
  $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --nvbandwidth $OUT/nvbw-256.json --nvbandwidth-size 256M --json $OUT/bench-$r.json > $OUT/bench-$r.log 2>&1
  echo "== bench $r rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^(staged|pinned|registered)|UNRELIABLE|reference" $OUT/bench-$r.log
done
timeout 120 $B/staged_probe --host memfd --sizes 16M --copies 20 --focus --dump 2>&1 | grep -v "^  contention"
