#!/usr/bin/env bash
# Device run 5 (staged8): host-to-device segment plans. Run 4's 64 MiB timeline had the copy
# engine busy back to back from the first DMA on, behind a first segment of ~100 us of fill. Do
# plans from a faster fill (a small first segment) gain? Timelines, then three alternated bench
# rounds: the default costs, fill 90 GB/s beside DMAs, equal segments, equal with a 256 KiB ramp.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F90="--costs 1,88,90,71.4,91.3,3.2,52.7,52.7,2.5"
timeout 100 $B/staged_probe --timeline --sizes 16M,64M --copies 20 $F90 2>&1 | grep -E "^==|pinned |staged H2D|phases|fill:" | cut -c1-900
for i in 1 2 3; do
  for cfg in "" "$F90" "--plan-upto 0" "--plan-upto 0 --ramp-first 256K"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,32M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench $i [$cfg] rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH/' /tmp/bench.log | head -32
  done
done
date -u
