#!/bin/sh
# Seed 004 (managed memory, docs/seed004.md) on a GPU host, with binaries built here and carried:
#
#   bazel build //engine/cli:resmem //engine/cli:resmem-gpu //backends/cuda:cuda_managed_test
#   mkdir -p .carry/seed004/lib
#   cp bazel-bin/engine/cli/resmem bazel-bin/engine/cli/resmem-gpu \
#      bazel-bin/backends/cuda/cuda_managed_test .carry/seed004/
#   cp -L /lib/x86_64-linux-gnu/libfuse3.so.3 .carry/seed004/lib/
#   # on the GPU host, from the repo root (scenarios/ beside it):
#   BIN=.carry/seed004 OUT=out/seed004 ci/hil-seed004.sh
#
# Writes into OUT: machine.txt (the GPU, its driver, the nvidia_uvm module's prefetch and
# thrashing parameters the model cites), cuda_managed_test.log, bench-managed.{txt,json}
# (`resmem bench --managed`: ratios to pinned cudaMemcpy of the same run) and
# scenarios-cuda.{txt,json} (`resmem run --backend cuda scenarios/seed004`). Prints each step's
# exit code and the tables; exits 1 when a step failed.
set -u
BIN=${BIN:-.carry/seed004}
OUT=${OUT:-out/seed004}
PASSES=${PASSES:-7}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failed=0
step() {  # step NAME LOG COMMAND...: runs it, logs its output, prints its exit code
  name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1
  rc=$?
  echo "== $name: exit $rc ($log)"
  [ $rc -eq 0 ] || failed=1
}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv
  for f in /sys/module/nvidia_uvm/parameters/uvm_perf_prefetch_* /sys/module/nvidia_uvm/parameters/uvm_perf_thrashing_* \
           /sys/module/nvidia_uvm/parameters/uvm_perf_fault_* /sys/module/nvidia_uvm/parameters/uvm_hmm*; do
    [ -r "$f" ] && echo "$(basename "$f") $(cat "$f")"
  done
  grep -E 'MemTotal|MemAvailable' /proc/meminfo
} >"$OUT/machine.txt" 2>&1
step cuda_managed_test "$OUT/cuda_managed_test.log" "$BIN/cuda_managed_test"
step "bench --managed" "$OUT/bench-managed.txt" \
  "$BIN/resmem-gpu" bench --backend cuda --managed --passes "$PASSES" --json "$OUT/bench-managed.json"
step "run --backend cuda scenarios/seed004" "$OUT/scenarios-cuda.txt" \
  "$BIN/resmem" run --backend cuda --verbose --json "$OUT/scenarios-cuda.json" scenarios/seed004
cat "$OUT/machine.txt"
tail -n 5 "$OUT/cuda_managed_test.log"
cat "$OUT/bench-managed.txt"
grep -E '^seed004|scenario cases' "$OUT/scenarios-cuda.txt"
exit $failed
