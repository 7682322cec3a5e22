#!/usr/bin/env bash
# Device run 15: every scenario file on the real GPU with the tree of this session (staged-path
# changes, seed003 files with kmod parts), JSON kept.
B=$(dirname "$0")
export LD_LIBRARY_PATH=$B/lib
exec > >(tee "$OUT/run15.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B/resmem run --backend cuda --json $OUT/scenarios-cuda.json scenarios/ > $OUT/scenarios-cuda.log 2>&1
echo "rc=$?"; tail -3 $OUT/scenarios-cuda.log
grep -E "FAILED|ERROR" $OUT/scenarios-cuda.log | head -20
