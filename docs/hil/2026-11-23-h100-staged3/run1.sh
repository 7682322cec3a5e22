#!/usr/bin/env bash
# Device run 1 (issue 11, 2026-11-23 night): staged single copies with DMAs queued behind stream
# signals (cuStreamWaitValue32/WriteValue32) against the event-polling pipeline, and variants.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for cfg in "" "--no-signals" "--edge-segment 0" "--edge-segment 128K" "--edge-segment 512K" "--lanes 8" "--lanes 12" "--min-segments 4" "--min-segments 16" "--lanes 8 --min-segments 4" ""; do
  t0=$(date +%s)
  out=$(timeout 120 $B/resmem-gpu bench --backend cuda --paths staged --sizes 1M,4M,16M,64M,256M --passes 7 $cfg 2>&1)
  echo "== staged $cfg ($(( $(date +%s) - t0 )) s)"; echo "$out" | awk '$1=="staged" || $1=="pinned" || /MISMATCH|rror|took/ {print "  " $0}'
done
timeout 100 $B/staged_probe --host memfd --sizes 1M,4M,16M --copies 20 2>&1 | tail -60
