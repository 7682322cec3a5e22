#!/usr/bin/env bash
# Device run 9 (staged13): bench parks every other engine's lanes before each cell and before the
# host check (LanePool::Park). Run 4 read staged-file 54-62% of pinned from 1 to 64 MiB against
# 74-83% for staged: each engine's 16 lanes spin for 1 ms after a copy, and staged-file came right
# after staged. Two alternated rounds: the tree before (resmem-gpu-old) and with parking, pinned,
# staged and staged-file; the tree before with staged-file alone (no second engine); then
# bench's default paths once with parking.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run9.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
row() { awk '$1=="staged" || $1=="staged-file" {printf "%s %s %s %s  ", $1, $2, $3$4, $6}' /tmp/bench.log; }
for round in 1 2; do
  for cfg in old new alone; do
    case $cfg in
      old) bin=resmem-gpu-old; paths=pinned,staged,staged-file;;
      new) bin=resmem-gpu; paths=pinned,staged,staged-file;;
      alone) bin=resmem-gpu-old; paths=pinned,staged-file;;
    esac
    timeout 100 $P/$bin bench --backend cuda --paths $paths --sizes 1M,4M,16M,64M --passes 7 --overlap-blocks 0 > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(row)"
    grep -E "^host check|^unreliable|^error" /tmp/bench.log | cut -c1-160 | head -2
  done
done
timeout 120 $P/resmem-gpu bench --backend cuda --passes 7 --json $OUT/run9-bench-all.json > $OUT/run9-bench-all.log 2>&1
echo "== bench all paths rc=$? $(cp $OUT/run9-bench-all.log /tmp/bench.log; row)"
grep -E "^host check|^unreliable|^H2D|^D2H" $OUT/run9-bench-all.log | cut -c1-200
date -u
