#!/usr/bin/env bash
# ci/hil-nightly.sh's scenario step judged on a machine without a GPU: a stand-in resmem-gpu
# (exit 0, so the nightly goes on) and the real resmem, whose cuda backend is unavailable here.
# Every case that applies must then count against the threshold, by name, and the report must
# show the simulator's and the GPU's verdicts side by side and the cases per verdict.
set -u
RESMEM=$1
T=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$T/work/bin" "$T/work/ci"
cp -L ci/hil-nightly.sh ci/hil-thresholds.json "$T/work/ci/"
cp -rL scenarios "$T/work/scenarios"
cp -L "$RESMEM" "$T/work/bin/resmem"
printf '#!/bin/sh\nexit 0\n' > "$T/work/bin/resmem-gpu"
chmod +x "$T/work/bin/resmem-gpu" "$T/work/bin/resmem"
fails=0
expect() {  # expect WHAT FILE PATTERN
  if grep -qE -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in $2"; fails=$((fails + 1)); fi
}
(cd "$T/work" && ci/hil-nightly.sh --bin bin --out out --steps scenarios) > "$T/nightly.log" 2>&1
rc=$?
cat "$T/nightly.log"
if [[ $rc != 1 ]]; then echo "FAIL exit $rc, want 1 (a regression)"; fails=$((fails + 1)); fi
D=$(ls -d "$T"/work/out/*/ | head -1)
expect "unavailable cases fail the step"  "$D/report.md" "FAIL  scenarios on cuda: 0 of the [0-9]+ cases that apply pass: not .*UNAVAILABLE"
expect "run_min counts only cases run"    "$D/report.md" "FAIL  scenarios run on cuda \(neither N/A nor UNAVAILABLE\): 0 of"
expect "sim and cuda side by side"        "$D/report.md" "\| seed000-register-pfnmap-r580 \| - \| bug \| REPRODUCED \| UNAVAILABLE \|"
expect "N/A keeps its reason"             "$D/report.md" "\| seed002-corrupted-page-table \| - \| bug \| REPRODUCED \| N/A \| no module can load"
expect "cases per verdict"                "$D/report.md" "^- UNAVAILABLE \([0-9]+\): "
expect "scenarios.log counts cases run"   "$D/scenarios.log" "cases run on the GPU machine \(neither N/A nor UNAVAILABLE\): 0 of [0-9]+"
expect "no other step ran"                "$D/summary.json" "\"scenarios-sim=0\""
if ls "$D" | grep -qE "bench|stream|profile"; then echo "FAIL --steps scenarios ran other steps"; fails=$((fails + 1)); fi
echo "hil_nightly_test: $fails failed"
exit $((fails > 0))
