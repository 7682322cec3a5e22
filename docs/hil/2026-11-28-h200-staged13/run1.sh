#!/usr/bin/env bash
# Device run 1 (staged13): the first run on the H200 kind this workplace now lends (every report
# before was an H100 host). The tree of 1f165e0 (the SM copy by default, 2e3781c): the machine's
# facts, NVIDIA's nvbandwidth v0.8 (pinned copy-engine H2D/D2H at 4, 16 and 256 MiB), the CUDA
# backend's tests, the staged engine's GPU tests, every scenario file on the CUDA runtime, the
# host's staging costs and ceiling (staged_probe --ceiling), and bench: default against the DMAs
# (--sm-copy-upto 0), three alternated rounds, pinned and staged, both ways, 1-256 MiB, the first
# round's pinned row checked against nvbandwidth.
B=$(dirname "$0")
P=$B/../perf
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run1.log") 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,memory.total --format=csv,noheader
uname -r; nproc; free -g | head -2
grep -m1 "model name" /proc/cpuinfo; grep -m1 -o -w -E "cldemote|movdir64b|avx512f|clwb" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
for b in 4 16 256; do
  timeout 60 $P/nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b $b -i 7 -j > $OUT/nvbandwidth-$b.json 2>/dev/null
  echo "== nvbandwidth ${b} MiB rc=$? $(python3 -c "
import json,sys
d=json.load(open('$OUT/nvbandwidth-$b.json'))
for t in d['nvbandwidth']['testcases']:
  print(t['name'], t.get('bandwidth_matrix',[['?']])[0][0] if 'bandwidth_matrix' in t else t.get('status'), end='  ')
" 2>&1)"
done
timeout 60 $P/cuda_gpu_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure" | tail -4
timeout 200 $P/staged_cuda_test 2>&1 | grep -E "^\[  PASSED|^\[  FAILED|Failure|note:" | tail -8
timeout 240 $P/resmem run --backend cuda scenarios/ > $OUT/run1-scenarios-cuda.log 2>&1
echo "== scenarios rc=$?"; tail -1 $OUT/run1-scenarios-cuda.log; grep -E "FAILED|ERROR" $OUT/run1-scenarios-cuda.log | cut -c1-200 | head
timeout 120 $P/staged_probe --ceiling --sizes 1M,4M,16M,64M,256M --copies 21 > /tmp/ceiling.log 2>&1; echo "== ceiling rc=$?"
cat /tmp/ceiling.log | cut -c1-220
for round in 1 2 3; do
  for cfg in "" "--sm-copy-upto 0"; do
    tag=$(echo "${cfg:-default}" | tr -d ' -')
    ref=(); [ $round = 1 ] && ref=(--nvbandwidth $OUT/nvbandwidth-256.json --nvbandwidth-size 256M)
    timeout 100 $P/resmem-gpu bench --backend cuda --paths pinned,staged --sizes 1M,4M,16M,64M,256M --passes 9 --overlap-blocks 0 $cfg "${ref[@]}" --json $OUT/run1-r$round-$tag.json > /tmp/bench.log 2>&1
    echo "== bench round $round [${cfg:-default}] rc=$? $(awk '$1=="staged" {printf "%s %s %s  ", $2, $3$4, $6}' /tmp/bench.log)"
    awk '$1=="pinned" {printf "%s %s %s  ", $2, $3$4, $5}' /tmp/bench.log; echo
    grep -E "^host check|^unreliable|went by DMAs|nvbandwidth" /tmp/bench.log | cut -c1-200 | head -4
  done
done
date -u
