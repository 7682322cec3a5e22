#!/usr/bin/env bash
# Device run 13 (staged7): does the piece kernel's high-priority stream slow the SM copy on an
# idle GPU (run 12: 16 MiB 83% where runs 1, 6, 9 read 88-89%)? Bench rounds of --sm-copy-upto
# 64M alternating the ring's stream (as committed) with the lane's per-thread stream (a build
# that takes the latter when RESMEM_X_THREAD_STREAM is set; not committed).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run13.log") 2>&1
date -u
for i in 1 2 3; do
  for x in "" 1; do
    if [ -n "$x" ]; then export RESMEM_X_THREAD_STREAM=1; lab=thread-stream; else unset RESMEM_X_THREAD_STREAM; lab=priority-stream; fi
    timeout 100 $B/resmem-gpu.x bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 11 --overlap-blocks 0 --sm-copy-upto 64M > /tmp/bench.log 2>&1
    echo "== $i $lab rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -30
  done
done
date -u
