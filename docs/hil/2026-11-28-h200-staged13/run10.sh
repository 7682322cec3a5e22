#!/usr/bin/env bash
# Device run 10 (staged13): the final tree (dd0f968) on the H200: the CUDA backend's tests, the
# staged engine's GPU tests, every scenario file on the CUDA runtime, calibrate's profile checked
# against the simulator on this host's own memcpy rates, the staged stream's summary (no longer
# cut), and bench, pinned and staged, both ways, 1-256 MiB.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 200 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -8
timeout 240 $P/resmem run --backend cuda scenarios/ > $OUT/run10-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run10-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run10-scenarios-cuda.log | cut -c1-200 | head
timeout 100 $P/resmem-gpu calibrate --backend cuda --runs 1 --passes 5 --out $OUT/run10-profile.json --report $OUT/run10-fidelity.md > /tmp/cal.log 2>&1
echo "== calibrate rc=$?"; grep -E "^The simulator's host|DISAGREES|^## Disagreements" $OUT/run10-fidelity.md | cut -c1-200
timeout 60 $P/resmem-gpu stream --backend cuda --block 16M --rate 0 --blocks 3000 --host file 2>&1 | grep -v "^stream:" | cut -c1-160
timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 --json $OUT/run10-bench.json > /tmp/bench.log 2>&1
echo "== bench rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
grep -E "^host check|^unreliable|went by DMAs" /tmp/bench.log | cut -c1-160 | head -3
date -u
