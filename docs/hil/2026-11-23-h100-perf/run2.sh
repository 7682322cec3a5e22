#!/usr/bin/env bash
# Device run 2 (issue 11): the staged engine on RAM (memfd) against the disk-file stand-in, and
# its tuning, interleaved with pinned.
B=$(dirname "$0")
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nproc
$B/resmem-gpu bench --backend cuda --paths staged,staged-file --sizes 1M,4M,16M,64M,256M --json $OUT/bench-staged.json > $OUT/bench-staged.log 2>&1
cat $OUT/bench-staged.log
for cfg in "--ramp-first 256K" "--min-segments 4" "--lanes 12" "--lanes 8" "--lanes 12 --ramp-first 256K" "--lanes 12 --min-segments 4" "--cached-fill" "--lanes 12 --chunk 4M"; do
  out=$($B/resmem-gpu bench --backend cuda --paths staged --sizes 1M,4M,16M,64M,256M $cfg 2>&1)
  echo "== staged $cfg"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6}'
done
