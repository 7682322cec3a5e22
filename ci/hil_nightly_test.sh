#!/usr/bin/env bash
# ci/hil-nightly.sh's scenario step judged on a machine without a GPU: a stand-in resmem-gpu
# (exit 0, so the nightly goes on) and the real resmem, whose cuda backend is unavailable here.
# Every case that applies must then count against the threshold, by name, and the report must
# show the simulator's and the GPU's verdicts side by side and the cases per verdict.
# Then the nightly under its own faults (a crashing and a hanging step, a second run the same day).
set -u
RESMEM=$1
CHECK_JUNIT=${2:-ci/junit/check_junit.py}  # xmllint against ci/junit/junit.xsd, then the counts
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
valid_junit() {  # valid_junit WHAT FILE...: each file valid against the JUnit schema, counts right
  if python3 "$CHECK_JUNIT" "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
valid_junit "junit.xml and the scenario runs' JUnit valid" "$D/junit.xml" "$D/scenarios.junit.xml" "$D/scenarios-sim.junit.xml"
expect "junit: a testcase per step"        "$D/junit.xml" '<testcase name="scenarios-sim" classname="hil-nightly.steps" time="[0-9]+">'
expect "junit: a threshold's failure"      "$D/junit.xml" '<testcase name="scenarios on cuda" classname="hil-nightly.thresholds" time="0">'
expect "junit: the failure's message"      "$D/junit.xml" '<failure message="scenarios on cuda: 0 of the [0-9]+ cases that apply pass: not '
expect "junit: GPU cases skipped as UNAVAILABLE" "$D/scenarios.junit.xml" '<skipped message="UNAVAILABLE: '
if ls "$D" | grep -qE "bench|stream|profile"; then echo "FAIL --steps scenarios ran other steps"; fails=$((fails + 1)); fi

# The nightly survives its own faults: a stand-in resmem-gpu whose calibrate step crashes
# (SIGSEGV), whose bench step hangs (killed by --step-timeout) and whose stream steps succeed.
# The report must still be written, name the crash and the timeout, and be marked incomplete;
# the exit is 4. A second run the same day writes a new folder and leaves the first untouched.
mkdir -p "$T/faulty/bin" "$T/faulty/ci"
cp -L ci/hil-nightly.sh ci/hil-thresholds.json "$T/faulty/ci/"
cat > "$T/faulty/bin/resmem-gpu" <<'SH'
#!/bin/bash
case "$1" in
  bench) [[ " $* " == *" --paths pinned "* ]] && exit 0   # the nightly's GPU probe
         sleep 3017 ;;                                     # the bench step hangs
  calibrate) kill -SEGV $$ ;;                              # the calibrate step crashes
  stream) while [ $# -gt 0 ]; do [ "$1" = --json ] && out=$2; shift; done
          printf '{"delivered": 50, "dropped": 0, "corrupt": 0, "blocks": 50, "block_bytes": 16777216, "rate_hz": 0, "host_kind": "memfd", "gbps": 50, "ratio_to_pinned": 0.95, "pinned_gbps": 52.6, "latency_ms": {"p50": 1, "p99": 2, "max": 3}, "path": "stand-in"}\n' > "$out" ;;
esac
SH
chmod +x "$T/faulty/bin/resmem-gpu"
nightly_faulty() {  # nightly_faulty RUN [STEPS]: the faulty nightly, with a 2 s step timeout;
  # prints the exit code. The first run takes every faulty step; the later ones only the stream
  # step (a folder of their own, the writer's failure), so they do not wait out a hang again.
  (cd "$T/faulty" && ci/hil-nightly.sh --bin bin --out out --steps "${2:-calibrate,bench,stream}" --quick \
     --step-timeout 2) > "$T/faulty-$1.log" 2>&1
  echo $?
}
t0=$(date +%s)
rc=$(nightly_faulty 1)
took=$(( $(date +%s) - t0 ))
cat "$T/faulty-1.log"
if [[ $rc != 4 ]]; then echo "FAIL faulty nightly exit $rc, want 4 (a step crashed or timed out)"; fails=$((fails + 1)); else echo "ok   faulty nightly exits 4"; fi
if (( took > 60 )); then echo "FAIL the hanging step was not stopped: the run took $took s"; fails=$((fails + 1)); else echo "ok   the hanging step was stopped (run took $took s)"; fi
if pgrep -f "sleep 3017" > /dev/null; then echo "FAIL the hanging step's child outlived the timeout"; fails=$((fails + 1)); else echo "ok   no process of the hanging step is left"; fi
DAY=$(date -u +%Y-%m-%d)
F="$T/faulty/out/$DAY"
expect "report written for a faulty run"   "$F/report.md" "^## INCOMPLETE"
expect "crash recorded with its signal"    "$F/report.md" "FAIL  step calibrate CRASHED \(SIGSEGV; see calibrate.log\)"
expect "hang recorded as a timeout"        "$F/report.md" "FAIL  step bench TIMED OUT"
expect "steps that ran are still judged"   "$F/report.md" "ok    stream rate: corrupt 0"
expect "summary marked incomplete"         "$F/summary.json" "\"complete\": false"
expect "summary lists the timeout"         "$F/summary.json" "\"bench=timeout\""
expect "summary lists the crash"           "$F/summary.json" "\"calibrate=signal-SIGSEGV\""
expect "the step log says it was killed"   "$F/bench.log" "timed out after 2 s and was killed"
valid_junit "junit.xml of a faulty run valid" "$F/junit.xml"
expect "junit: the crash is an error"      "$F/junit.xml" '<error message="step calibrate CRASHED \(SIGSEGV; see calibrate.log\)" type="signal-SIGSEGV"'
expect "junit: the hang is an error"       "$F/junit.xml" '<error message="step bench TIMED OUT'
expect "junit: thresholds that held pass"  "$F/junit.xml" '<testcase name="stream rate corrupt" classname="hil-nightly.thresholds" time="0">'
expect "junit: skipped nvbandwidth says why" "$F/junit.xml" '<skipped message="skipped: nvbandwidth \(no bin/nvbandwidth'
first=$(cat "$F"/report.md "$F"/summary.json | md5sum)
rc=$(nightly_faulty 2 stream)
if [[ -d "$F-2" && -f "$F-2/report.md" ]]; then echo "ok   second run the same day wrote $(basename "$F-2")"; else echo "FAIL second run: no $F-2/report.md (exit $rc)"; ls "$T/faulty/out"; fails=$((fails + 1)); fi
if [[ "$(cat "$F"/report.md "$F"/summary.json | md5sum)" == "$first" ]]; then echo "ok   first report left untouched"; else echo "FAIL the second run changed the first report"; fails=$((fails + 1)); fi
expect "second report names its folder"    "$F-2/report.md" "^# resmem hardware-in-the-loop report $DAY-2$"
# The verdict script itself failing (a thresholds file without the stream keys) still leaves a
# report, marked incomplete, in its own folder (the third run of the day).
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); del t["stream_rate"]; json.dump(t, open(sys.argv[1], "w"))' "$T/faulty/ci/hil-thresholds.json"
rc=$(nightly_faulty 3 stream)
if [[ $rc != 4 ]]; then echo "FAIL report-writer failure: exit $rc, want 4"; fails=$((fails + 1)); else echo "ok   report-writer failure exits 4"; fi
expect "report written when the writer fails" "$F-3/report.md" "The report writer failed \(exit 5;"
expect "its summary says incomplete"          "$F-3/summary.json" "\"complete\": false"
valid_junit "junit.xml when the writer fails" "$F-3/junit.xml"
expect "its junit.xml has the writer's error" "$F-3/junit.xml" '<error message="the report writer failed \(exit 5\)'
echo "hil_nightly_test: $fails failed"
exit $((fails > 0))
