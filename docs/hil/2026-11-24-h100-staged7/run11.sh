#!/usr/bin/env bash
# Device run 11 (staged7): after the fill rule moved into HostToDeviceFill (no behaviour change
# meant): the staged CUDA tests, and two bench rounds with every copy through the segment DMAs
# (--sm-copy-upto 0, where the rule is used) against the default.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u
timeout 240 $B/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -6
for i in 1 2; do
  for cfg in "--sm-copy-upto 0" ""; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 11 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
