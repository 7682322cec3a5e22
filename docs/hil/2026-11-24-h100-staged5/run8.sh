#!/usr/bin/env bash
# Device run 8: where the time goes in planned copies: per-segment timelines of the committed
# defaults at 4, 16 and 64 MiB (staged_probe --timeline), and the same with equal segments.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run8.log") 2>&1
date -u
timeout 120 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 21 > $OUT/run8-probe.log 2>&1; echo "probe rc=$?"
timeout 120 $B/staged_probe --timeline --sizes 4M,16M,64M --copies 21 --plan-upto 0 --plan-d2h-from 0 > $OUT/run8-probe-equal.log 2>&1; echo "probe equal rc=$?"
grep -E "^==|dispatch|pinned|dma-only|fill-only|drain-only|staged|phases|per segment" $OUT/run8-probe.log | cut -c1-2000
echo "=== equal"
grep -E "^==|staged|phases" $OUT/run8-probe-equal.log | cut -c1-400
date -u
