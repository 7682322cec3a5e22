#!/usr/bin/env bash
# Device run 3 (staged7): run 2 again with the order turned round and a build whose piece ring
# exists but moves no bench copy (--sm-copy-upto 4K): does the ring's mere presence slow the
# segment DMAs at 128 MiB, or was it the order? Sizes 16M,64M,128M,256M, three rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u
for i in 1 2 3; do
  for cfg in "--sm-copy-upto 0" "--sm-copy-upto 4K" "--sm-copy-upto 256M" ""; do
    timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 16M,64M,128M,256M --passes 11 $cfg > /tmp/bench.log 2>&1
    echo "== $i ${cfg:-default} rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH/' /tmp/bench.log | head -30
  done
done
date -u
