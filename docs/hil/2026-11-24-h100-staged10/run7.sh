#!/usr/bin/env bash
# Device run 7 (staged10): the fill frontier's last copy DMA by DMA (--dump): 4 and 16 MiB, the
# default unit and with the late issue, three times each.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u
for i in 1 2 3; do
  for cfg in "--frontier" "--frontier --frontier-lead-us 12"; do
    echo "== $i staged_probe --timeline --dump [$cfg]"
    timeout 100 $B/staged_probe --timeline --dump --sizes 4M,16M --copies 9 $cfg 2>&1 |
      awk '/^== [0-9]/{print; p=0} /^  pinned  /{print substr($0,1,60)} /^  staged H2D/{print substr($0,1,60); p=1; next} p>=1 && /phases|last copy/{print; p++} p>2{p=0}'
  done
done
date -u
