#!/usr/bin/env bash
# Device run 4 (staged13): after the nightly (run 3), whose bench pass was flagged (one lane stall
# of 992 us) and whose staged stream read 91.8% of pinned: bench's full curve (every path,
# 64 KiB-256 MiB both ways, 7 passes) twice, and the stream at 16 MiB blocks flat out, staged
# (disk-file stand-in) three times and registered once, on another H200 machine.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  timeout 120 $P/resmem-gpu bench --backend cuda --passes 7 --json $OUT/run4-bench-r$round.json > $OUT/run4-bench-r$round.log 2>&1
  echo "== bench round $round rc=$?"
  grep -E "^host check|^unreliable|^H2D|^D2H|went by DMAs" $OUT/run4-bench-r$round.log | cut -c1-220
  awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' $OUT/run4-bench-r$round.log; echo
done
for i in 1 2 3; do
  timeout 60 $P/resmem-gpu stream --backend cuda --block 16M --rate 0 --blocks 3000 --host file > /tmp/s.log 2>&1
  echo "== stream staged $i rc=$? $(grep -E "throughput|delivered" /tmp/s.log | tr -s ' ' | tr '\n' ' ')"
done
timeout 60 $P/resmem-gpu stream --backend cuda --block 16M --rate 0 --blocks 3000 > /tmp/s.log 2>&1
echo "== stream registered rc=$? $(grep -E "throughput|delivered" /tmp/s.log | tr -s ' ' | tr '\n' ' ')"
date -u
