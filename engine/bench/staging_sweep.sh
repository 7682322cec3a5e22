#!/usr/bin/env bash
# Sweeps the staged path's tuning on a GPU host and prints one line per configuration (the staged
# rows of `resmem-gpu bench` plus the ratio to pinned), for choosing TransferOptions defaults.
#   engine/bench/staging_sweep.sh BIN CONFIG...
# BIN is resmem-gpu; each CONFIG is a quoted set of bench options, e.g. "--lanes 16 --chunk 1M".
# Passes: $PASSES (default 5). Sizes: $SIZES (default 16M,256M). Nothing is asserted: figures only.
set -u
BIN=$1; shift
PASSES=${PASSES:-5}
SIZES=${SIZES:-16M,256M}
for cfg in "$@"; do
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  out=$("$BIN" bench --backend cuda --paths staged --sizes "$SIZES" --passes "$PASSES" $cfg 2>&1)
  rc=$?
  t1=$(date +%s%N)
  rows=$(echo "$out" | awk '$1=="staged" {printf "%s %s %s %s; ", $2, $3$4, $5, $6}')
  printf '%-60s rc=%d %6d ms | %s\n' "$cfg" "$rc" $(( (t1 - t0) / 1000000 )) "$rows"
  [ $rc -ne 0 ] && echo "$out" | tail -n 5
done
