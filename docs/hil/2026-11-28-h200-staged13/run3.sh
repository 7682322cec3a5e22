#!/usr/bin/env bash
# Device run 3 (staged13): the HIL nightly, every step (scenarios on the simulator and on CUDA,
# calibrate x3 with the fidelity report, nvbandwidth beside bench, bench's full curve, the
# registration-time table, stream), on the H200 kind, with the binaries of 1f165e0. The report
# folder comes back as one archive.
B=$(dirname "$0")
P=$(cd $B/../perf && pwd)
export LD_LIBRARY_PATH=$P/lib
exec > >(tee "$OUT/run3.log") 2>&1
date -u
timeout 520 ci/hil-nightly.sh --bin $P --out /tmp/hil --step-timeout 240
echo "== nightly rc=$?"
date -u
tar czf $OUT/nightly.tgz -C /tmp/hil .
