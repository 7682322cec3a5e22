#!/usr/bin/env bash
# Experimental build, not committed: --d2h-max-segment (TransferOptions::staging_d2h_max_segment, default 1 MiB) was reverted after this run (report, section 5).
# Device run 8 (staged13): the device-to-host segment cap (--d2h-max-segment, default 1 MiB,
# from run 7's 16-segment rounds) in the working tree: the CUDA backend's tests, the staged
# engine's GPU tests (their device-to-host copies now in 1 MiB segments), then four alternated
# bench rounds, the new default against no cap (--d2h-max-segment 0, the eight segments of
# before), pinned and staged, 4, 16 and 32 MiB both ways.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 200 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -8
for round in 1 2 3 4; do
  for cfg in default nocap; do
    case $cfg in default) a=();; nocap) a=(--d2h-max-segment 0);; esac
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 4M,16M,32M --passes 9 --overlap-blocks 0 "${a[@]}" > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "^host check|^unreliable|^error" /tmp/bench.log | cut -c1-160 | head -2
  done
done
date -u
