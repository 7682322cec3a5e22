#!/usr/bin/env bash
# Device run 4 (staged9): run 3 showed a staged copy's time is mostly the caches' state: with
# 512 MiB of other memory dirtied before each copy (--evict-mib 512) 16 MiB took 536-580 us
# against 366-387 warm, pinned 340 against 312. Which fill and which ring size hold up when the
# caches are cold, and what they cost when warm: the fill frontier with the default ring (4 x 8
# MiB, cached fill + CLDEMOTE), a smaller ring (4 x 2 MiB, 4 x 1 MiB: fewer cold lines, reused
# within a copy), non-temporal fill (--nt-fill-below 1G); the segment pipelines by default and
# with non-temporal fill. Then bench of the two frontier shapes that do best.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
probe() {
  echo "== staged_probe --timeline [$1] --evict-mib $2"
  timeout 120 $B/staged_probe --timeline --sizes 16M,64M --copies 15 $1 --evict-mib $2 2>&1 |
    grep -E "^== [0-9]|pinned  |staged H2D|MISMATCH" | cut -c1-100
}
for ev in 512 0; do
  for cfg in "--frontier" "--frontier --chunk 2M --buffers 4" "--frontier --chunk 1M --buffers 4" \
             "--frontier --nt-fill-below 1G" "" "--nt-fill-below 1G --demote-from 0"; do
    probe "$cfg" $ev
  done
done
for cfg in "--frontier" "--frontier --chunk 2M --buffers 4" "--frontier --nt-fill-below 1G" ""; do
  timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
  echo "== bench [$cfg] rc=$?"
  awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -12
done
date -u
