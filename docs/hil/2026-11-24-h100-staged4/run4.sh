#!/usr/bin/env bash
# Device run 4: why drains are slow during a device-to-host copy (timelines with non-temporal
# stores to the host, without the drain's CLDEMOTE), and a small first segment host to device now
# that pieces are 16 KiB; bench of the new default (16 KiB pieces, elastic runs) against those,
# alternated twice.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run4.log") 2>&1
date -u
for cfg in "" "--stream-to-host" "--demote-drain-upto 0" "--ramp-first 128K"; do
  echo "=== timeline ${cfg:-default}"
  timeout 60 $B/staged_probe --timeline --sizes 1M,4M --copies 15 $cfg > $OUT/p.log 2>&1; echo "probe rc=$?"
  grep -E "staged|last copy|phases" $OUT/p.log | cut -c1-700
done
for i in 1 2; do
  for cfg in "" "--stream-to-host" "--ramp-first 128K" "--min-piece 64K"; do
    out=$(timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default}"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH/'
  done
done
date -u
