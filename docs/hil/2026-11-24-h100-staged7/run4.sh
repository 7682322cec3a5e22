#!/usr/bin/env bash
# Device run 4 (staged7): the piece kernel after the host idled (GPU clocks?): smx with a
# host-only pause of 0, 5, 50 ms before every timed copy; then bench 16M alone vs 8M,16M,32M.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u
for ms in 0 5 50 0; do echo "== smx idle $ms ms"; timeout 100 $B/smx 15 11 $ms only | grep -v "^SMs"; done
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,pstate,power.draw --format=csv
for i in 1 2; do
  for sizes in 16M 8M,16M,32M; do
    for cfg in "" "--sm-copy-upto 0"; do
      timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes $sizes --passes 11 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
      echo "== $i $sizes ${cfg:-default} rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH/' /tmp/bench.log | head -30
    done
  done
done
date -u
