#!/usr/bin/env bash
# Device run 5: does the event recorded after every segment DMA cost the copy engine time? DMAs
# from pinned memory with an event after each against one event after the last; then the whole
# curve of the new default (16 KiB pieces, elastic lane runs), two bench runs.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run5.log") 2>&1
date -u
timeout 120 $B/staged_probe --streams-matrix --sizes 1M,4M,16M --copies 21 | grep -E "stream |one event"
for r in a b; do
  timeout 200 $B/resmem-gpu bench --backend cuda --paths pinned,staged,registered-direct --sizes 64K,256K,1M,4M,16M,64M,256M --passes 15 --json $OUT/bench-$r.json > $OUT/bench-$r.log 2>&1
  echo "== bench $r rc=$?"; grep -E "^(staged|pinned)|UNRELIABLE|reference|took" $OUT/bench-$r.log
done
date -u
