#!/usr/bin/env bash
# Device run 5 (staged9): run 4's cold copies taken apart. With --evict-mib 512 (512 MiB of other
# memory dirtied before each timed step) and without: the DMAs alone from the pinned ring, the
# lanes' fill alone (source just stamped, as a staged copy meets it), and the staged copy, for
# the segment pipelines and the fill frontier. Two rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "" "--frontier"; do
    for ev in 0 512; do
      echo "== round $round staged_probe --timeline [$cfg] --evict-mib $ev"
      timeout 120 $B/staged_probe --timeline --sizes 16M,64M --copies 15 $cfg --evict-mib $ev 2>&1 |
        grep -E "^== [0-9]|pinned  |dma-only|fill-only|staged H2D|MISMATCH" | cut -c1-100
    done
  done
done
date -u
