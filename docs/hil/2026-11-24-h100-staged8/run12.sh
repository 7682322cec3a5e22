#!/usr/bin/env bash
# Device run 12 (staged8): the fill frontier against the segment pipelines (--no-frontier) with
# the lanes asleep at a copy's start (staged_probe: back to back, and a 3 ms pause between
# copies), then four alternated bench rounds with each round's JSON.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run12.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "" "--no-frontier"; do
  echo "== staged_probe [$cfg]"
  timeout 150 $B/staged_probe --sizes 4M,16M,64M --copies 20 $cfg 2>&1 | grep -E "^==|pinned |back to back|3 ms pause" | cut -c1-200
done
for i in 1 2 3 4; do
  for cfg in "" "--no-frontier"; do
    tag=$([ -z "$cfg" ] && echo frontier || echo segments)
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 --json $OUT/run12-bench-$i-$tag.json $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -32
  done
done
date -u
