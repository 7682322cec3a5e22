#!/usr/bin/env bash
# Device run 3: the two-rate model (the first H2D segment filled at the lanes' rate alone, the
# last D2H segment drained alone, the rest at their rates beside DMAs; defaults = run 2's
# costs). Ceiling and plans per size, then bench rounds alternating the default cut and
# --plan --plan-d2h, sizes 64K-256M.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |Failure" | tail -3
timeout 120 $B/staged_probe --ceiling --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --copies 21 > $OUT/run3-ceiling.log 2>&1; echo "== ceiling rc=$?"
cat $OUT/run3-ceiling.log
for i in 1 2 3; do
  for cfg in "" "--plan --plan-d2h"; do
    tag=$(echo "${cfg:-default}" | tr -c 'a-z0-9\n' '_' | cut -c1-40)
    json=""; [ $i = 2 ] && json="--json $OUT/run3-bench-$i-$tag.json"
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,2M,4M,8M,16M,32M,64M,256M --passes 11 $cfg $json > /tmp/bench.log 2>&1
    echo "== $i staged ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -20
  done
done
date -u
