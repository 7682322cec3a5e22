#!/usr/bin/env bash
# Device run 4: the new defaults (single copies planned up to 64 MiB host to device and 16 MiB
# device to host) against equal segments everywhere (--plan-upto 0 --plan-d2h-upto 0), three
# alternated bench rounds; the CUDA tests and every scenario file on this tree.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u
timeout 60 $B/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -11
for i in 1 2 3; do
  for cfg in "" "--plan-upto 0 --plan-d2h-upto 0"; do
    tag=$(echo "${cfg:-default}" | tr -c 'a-z0-9\n' '_' | cut -c1-40)
    json=""; [ $i = 2 ] && json="--json $OUT/run4-bench-$i-$tag.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 $cfg $json > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run4-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run4-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run4-scenarios-cuda.log | head
date -u
