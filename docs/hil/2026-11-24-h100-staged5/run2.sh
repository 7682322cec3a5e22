#!/usr/bin/env bash
# Device run 2: segment plans, the costs beside a DMA measured on lane 0 (run 1 measured them on a 17th thread, which 16 vCPUs did not schedule) (segment_plan.h). The CUDA tests (8 pipelines, now with "plan"),
# the host's staging costs and the model's ceiling per size (staged_probe --ceiling), then bench
# rounds alternating the default cut, --plan --plan-d2h with the built-in costs, and the same with
# the costs just measured beside a DMA.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u
for k in 1 2 3; do timeout 60 $B/cuda_gpu_test --gtest_filter=*TwoStreams* 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|Expected|Which|actual|overlap" | head -8; done
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -10
timeout 120 $B/staged_probe --ceiling --sizes 64K,256K,1M,4M,16M,64M,256M --copies 21 > $OUT/run2-ceiling.log 2>&1; echo "== ceiling rc=$?"
cat $OUT/run2-ceiling.log
h2d=$(grep "^H2D costs, beside" $OUT/run2-ceiling.log | sed 's/.*--costs //')
d2h=$(grep "^D2H costs, beside" $OUT/run2-ceiling.log | sed 's/.*--costs //')
# H2D's start, fill, submit, DMA and per-DMA figures with D2H's drain.
measured=$(echo "$h2d $d2h" | awk '{split($1,a,","); split($2,b,","); printf "%s,%s,%s,%s,%s,%s", a[1],a[2],b[3],a[4],a[5],a[6]}')
echo "measured costs: $measured"
for i in 1 2 3; do
  for cfg in "" "--plan --plan-d2h" "--plan --plan-d2h --costs $measured"; do
    tag=$(echo "${cfg:-default}" | tr -c 'a-z0-9\n' '_' | cut -c1-40)
    json=""; [ $i = 2 ] && json="--json $OUT/run2-bench-$i-$tag.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 11 $cfg $json > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -16
  done
done
date -u
