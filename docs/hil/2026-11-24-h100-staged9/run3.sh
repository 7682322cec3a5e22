#!/usr/bin/env bash
# Device run 3 (staged9): why bench reads the fill frontier below staged_probe (staged8 run 16).
# staged_probe --evict-mib dirties 512 MiB of other memory before each timed copy (the ring and
# the source leave the caches, as bench's other paths and stamps push them out between two
# copies of one path) against none; the segment pipelines and the fill frontier alike; then bench
# on the same host, both ways. Two rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for cfg in "--frontier" ""; do
    for ev in 0 512; do
      echo "== round $round staged_probe --timeline [$cfg] --evict-mib $ev"
      timeout 120 $B/staged_probe --timeline --sizes 16M,64M --copies 15 $cfg --evict-mib $ev 2>&1 |
        grep -E "^== [0-9]|pinned  |staged H2D|MISMATCH" | cut -c1-110
    done
  done
  for cfg in "--frontier" ""; do
    timeout 120 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 16M,64M --passes 9 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== round $round bench [$cfg] rc=$?"
    awk '($1=="staged" || $1=="pinned") && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH|host check/' /tmp/bench.log | head -12
  done
done
date -u
