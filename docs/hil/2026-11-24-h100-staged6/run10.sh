#!/usr/bin/env bash
# Device run 10 (staged6): every scenario file twice more on the final tree (2adfafc): the
# median-of-5 WC memcpy (a937e7f) and the overlap step's median pass (7a8b54e).
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for k in 1 2 3; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run10-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run10-scenarios-cuda-$k.log; grep -E "FAILED|ERROR|overlap-one|wc-write" $OUT/run10-scenarios-cuda-$k.log | head
done
date -u
