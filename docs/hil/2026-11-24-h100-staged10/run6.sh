#!/usr/bin/env bash
# Device run 6 (staged10): the late issue lets DMAs grow whatever the smallest DMA, so a smaller
# first DMA (--frontier-min-dma 64K / 128K) could start the link earlier without more DMAs
# later. staged_probe --timeline (15 copies back to back), then four alternated bench rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CFGS=("--frontier" "--frontier --frontier-lead-us 12" "--frontier --frontier-lead-us 12 --frontier-min-dma 128K" "--frontier --frontier-lead-us 12 --frontier-min-dma 64K" "--frontier --frontier-min-dma 64K")
for round in 1 2; do
  for cfg in "${CFGS[@]}"; do
    echo "== round $round staged_probe --timeline [$cfg]"
    timeout 100 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 15 $cfg 2>&1 |
      awk '/^== [0-9]/{print; p=0} /^  pinned  /{print substr($0,1,60)} /^  staged H2D/{print substr($0,1,60); p=1; next} p==1 && /phases/{print substr($0,1,240); p=0}'
  done
done
for round in 1 2 3 4; do
  for cfg in "" "${CFGS[@]}"; do
    timeout 60 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== bench round $round [$cfg] rc=$? $(awk '$1=="staged" && $2=="H2D" {printf "%s%s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    grep -E "UNRELIABLE|MISMATCH" /tmp/bench.log | head -3
  done
done
date -u
