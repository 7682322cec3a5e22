#!/usr/bin/env bash
# Device run 4 (staged11): dyn3 (dyn3.cu.txt, as run 1) with the source, before each copy, left
# as the copy before left it, written by the GPU's copy engine (a device-to-host cudaMemcpy into
# the registered source, as a data-acquisition card's DMA writes a block), rewritten by the CPU,
# or behind 512 MiB of other memory written by the CPU. CLDEMOTE and non-temporal fills, 4 KiB
# ring (cudaHostAlloc), transparent huge pages for the source. Two rounds.
B=$(dirname "$0")
exec > >(tee "$OUT/run4.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2; do
  for before in asleft devwrite rewrite evict; do
    echo "== round $round, source $before"
    timeout 100 $B/dyn3 15 11 0,3 heap $before hostalloc | grep -v smaps
  done
done
date -u
