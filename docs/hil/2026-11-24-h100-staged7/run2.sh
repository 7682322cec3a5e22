#!/usr/bin/env bash
# Device run 2 (staged7): why 128 MiB H2D (segment DMAs in both builds) read lower in run 1's
# default rounds: rounds of 128 MiB alone (no SM copy before it in that process), 64M+128M+256M
# (SM copies at 64 MiB before it), each with the default and with --sm-copy-upto 0, and the SM
# copy at 128 and 256 MiB (--sm-copy-upto 256M).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run2.log") 2>&1
date -u
for i in 1 2; do
  for sizes in 128M 64M,128M,256M; do
    for cfg in "" "--sm-copy-upto 0" "--sm-copy-upto 256M"; do
      timeout 150 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes $sizes --passes 11 $cfg > /tmp/bench.log 2>&1
      echo "== $i $sizes ${cfg:-default} rc=$?"; awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH/' /tmp/bench.log | head -30
    done
  done
done
date -u
