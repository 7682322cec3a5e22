#!/usr/bin/env bash
# Device run 6: staged copies moved by the SMs in pieces (--sm-copy): the CUDA test first (data
# both ways, ring wrap), then bench against the DMA pipeline with 16/32/64 KiB pieces.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run6.log") 2>&1
date -u
timeout 120 $B/staged_cuda_test 2>&1 | grep -E "^\[  |skipped|Failure|Expected|Which|rror" | tail -12
for i in 1 2; do
  for cfg in "" "--sm-copy" "--sm-copy --sm-piece 16K" "--sm-copy --sm-piece 64K"; do
    out=$(timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 64K,1M,4M,16M,64M,256M --passes 11 $cfg 2>&1)
    echo "== $i staged ${cfg:-default} rc=$?"; echo "$out" | awk '$1=="staged" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|MISMATCH|rror/' | head -14
  done
done
date -u
