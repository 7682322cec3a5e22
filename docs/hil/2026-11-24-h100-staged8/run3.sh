#!/usr/bin/env bash
# Device run 3 (staged8): a mutant whose piece kernel ignores --sm-blocks (132 blocks always) must
# fail staged_cuda_test; then the SM copy's block count swept in two alternated bench rounds.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== mutant"; timeout 300 $B/staged_cuda_test.mutant 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Which is|sm_blocks" | head -12
for i in 1 2; do
  for blocks in 8 16 24 32 48 64 132; do
    timeout 100 $B/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M --passes 11 --overlap-blocks 0 --sm-copy-upto 64M --sm-blocks $blocks > /tmp/bench.log 2>&1
    echo "== bench $i --sm-blocks $blocks rc=$?"; awk '$1=="staged" && $2=="H2D" {printf "  %s %s %s %s %s\n", $1, $2, $3$4, $5, $6} /UNRELIABLE|unreliable|MISMATCH/' /tmp/bench.log | head -32
  done
done
date -u
