#!/usr/bin/env bash
# Device run 11 (staged6): every scenario file three times on b7a538c: h100-host WC writes at 10 GB/s, the
# cuda floor of wc_write_only 6700 MB/s.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run11.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for k in 1 2 3; do
timeout 240 $B/resmem run --backend cuda scenarios/ > $OUT/run11-scenarios-cuda-$k.log 2>&1
echo "== scenarios $k rc=$?"; tail -1 $OUT/run11-scenarios-cuda-$k.log; grep -E "FAILED|ERROR|overlap-one|wc-write" $OUT/run11-scenarios-cuda-$k.log | head
done
date -u
