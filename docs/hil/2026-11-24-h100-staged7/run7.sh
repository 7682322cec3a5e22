#!/usr/bin/env bash
# Device run 7 (staged7): does the piece ring's mere presence slow the segment DMAs of large
# copies (run 6: 256 MiB H2D 87-91% of pinned in the SM build, 94% without)? Sizes 256M and 1G
# only, so no copy in these runs is moved by the SMs: --sm-copy-upto 0 (no ring) against 4K and
# 128M (a ring, never used), three rounds; then 16M,256M with 128M (SMs at 16 MiB) against 0.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run7.log") 2>&1
date -u
for i in 1 2 3; do
  for cfg in "--sm-copy-upto 0" "--sm-copy-upto 4K" "--sm-copy-upto 128M"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 256M,1G --passes 7 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== $i ring-only $cfg rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/' /tmp/bench.log
  done
done
for i in 1 2 3; do
  for cfg in "--sm-copy-upto 0" "--sm-copy-upto 128M"; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 16M,256M --passes 7 --overlap-blocks 0 $cfg > /tmp/bench.log 2>&1
    echo "== $i mixed $cfg rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/' /tmp/bench.log
  done
done
date -u
