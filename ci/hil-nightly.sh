#!/usr/bin/env bash
# Hardware-in-the-loop nightly for a GPU host. Takes prebuilt binaries (built on CI with cudart
# linked statically; nothing is compiled here), runs the real-backend scenarios, calibrate, bench
# and stream, writes a dated report folder (JSON, Markdown, plot, and junit.xml: a testcase per step
# and per threshold, for GitLab/Jenkins) and exits non-zero when a result regresses past
# ci/hil-thresholds.json. Calibration runs fidelity.runs times (3): the simulator
# must lie inside the runs' bandwidth spread widened by fidelity.margin_pct, so one noisy run does
# not fail the night and a change that moves every run still does.
#
#   ci/hil-nightly.sh [--bin DIR] [--out DIR] [--thresholds FILE] [--steps LIST] [--quick]
#                     [--step-timeout SECONDS] [--slurm]
#     --bin DIR         holds resmem-gpu (//engine/cli:resmem-gpu) and, optionally, resmem
#                       (//engine/cli:resmem) for the scenarios; default .carry
#     --out DIR         report root; the report goes to DIR/YYYY-MM-DD, or DIR/YYYY-MM-DD-2, -3,
#                       ... when that day already has one (a report is never overwritten)
#     --step-timeout S  a step running longer is killed and recorded as timed out (default 3600)
#     --thresholds FILE default ci/hil-thresholds.json
#     --steps LIST      comma-separated subset of scenarios,calibrate,bench,stream (default all);
#                       thresholds are judged for the steps that ran
#     --quick           fewer passes and blocks (a smoke run, not for the record)
#     --slurm           run it as Slurm work instead, here on the submit host: each step a task of
#                       a job array on nodes with Feature=gpu, the scenario matrix in shards beside
#                       it, one dated report (ci/slurm/submit.sh --nightly; docs/scale-out.md);
#                       options after --slurm go to submit.sh, and its exit codes apply
# A step that crashes (killed by a signal), hangs past --step-timeout or fails to run (exit
# other than 0/1) is recorded as such in report.md and summary.json; the report is still written
# and marked INCOMPLETE (summary.json "complete": false).
# Exit: 0 all thresholds held, 1 a regression (listed in report.md), 2 bad usage,
#       3 no GPU here, 4 a step crashed, timed out or failed to run (report marked incomplete).
set -u
BIN=.carry
OUT_ROOT=out/hil
THRESHOLDS=ci/hil-thresholds.json
QUICK=0
STEP_TIMEOUT=3600
STEP_SET=scenarios,calibrate,bench,stream
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT_ROOT=$2; shift 2 ;;
    --thresholds) THRESHOLDS=$2; shift 2 ;;
    --steps) STEP_SET=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --step-timeout) STEP_TIMEOUT=$2; shift 2 ;;
    --slurm) shift
      # The same run as Slurm work; the default report root becomes out/slurm (a run per day).
      args=(--nightly --bin "$BIN" --thresholds "$THRESHOLDS" --steps "$STEP_SET")
      [ "$OUT_ROOT" != out/hil ] && args+=(--out "$OUT_ROOT")
      [ $QUICK = 1 ] && args+=(--quick)
      exec "$(dirname "$0")/slurm/submit.sh" "${args[@]}" "$@" ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "hil-nightly: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for s in ${STEP_SET//,/ }; do
  case "$s" in scenarios|calibrate|bench|stream) ;;
    *) echo "hil-nightly: unknown step '$s' in --steps (scenarios, calibrate, bench, stream)" >&2; exit 2 ;;
  esac
done
case "$STEP_TIMEOUT" in ''|*[!0-9]*|0)
  echo "hil-nightly: --step-timeout '$STEP_TIMEOUT' must be a positive number of seconds" >&2; exit 2 ;;
esac
want() { case ",$STEP_SET," in *",$1,"*) return 0 ;; esac; return 1; }
GPU="$BIN/resmem-gpu"
if [ ! -x "$GPU" ]; then
  echo "hil-nightly: $GPU not found: build //engine/cli:resmem-gpu and copy it to $BIN" >&2
  exit 2
fi
[ -f "$THRESHOLDS" ] || { echo "hil-nightly: thresholds $THRESHOLDS not found" >&2; exit 2; }
DAY=$(date -u +%Y-%m-%d)
# A fresh folder per run: DAY, then DAY-2, DAY-3, ... mkdir without -p fails when the folder
# exists, so two runs started together still get different folders.
mkdir -p "$OUT_ROOT" || { echo "hil-nightly: cannot create $OUT_ROOT" >&2; exit 2; }
DIR="$OUT_ROOT/$DAY"; n=1
until mkdir "$DIR" 2>/dev/null; do
  n=$((n + 1))
  [ $n -gt 999 ] && { echo "hil-nightly: cannot create a report folder $OUT_ROOT/$DAY-N" >&2; exit 2; }
  DIR="$OUT_ROOT/$DAY-$n"
done
echo "hil-nightly: report in $DIR"
PASSES=7; BLOCKS_RATE=600; BLOCKS_FLAT=3000
# Calibration runs and the bandwidth margin come from the thresholds file ("fidelity").
read -r CAL_RUNS CAL_MARGIN < <(python3 -c '
import json, sys
f = json.load(open(sys.argv[1])).get("fidelity", {})
print(f.get("runs", 3), f.get("margin_pct", 15))' "$THRESHOLDS") ||
  { echo "hil-nightly: cannot read fidelity runs/margin_pct from $THRESHOLDS" >&2; exit 2; }
[ $QUICK = 1 ] && { PASSES=3; BLOCKS_RATE=50; BLOCKS_FLAT=500; CAL_RUNS=2; }

STEPS=()
STEP_SECONDS=""  # " NAME=SECONDS" per step run: the JUnit file's times
# step NAME CMD...: runs CMD under --step-timeout, logs to DIR/NAME.log and records NAME=OUTCOME:
# its exit code; "timeout" when it ran past the limit (timeout(1) sends SIGTERM to it and its
# children, SIGKILL 10 s later); "signal-NAME" when a signal ended it (a crash: SIGSEGV, SIGABRT...).
step() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$(date +%s)
  timeout --kill-after=10 "$STEP_TIMEOUT" "$@" > "$DIR/$name.log" 2>&1
  local rc=$? outcome
  local took=$(( $(date +%s) - t0 ))
  outcome=$rc
  if [ $rc = 124 ] || { [ $rc = 137 ] && [ $took -ge "$STEP_TIMEOUT" ]; }; then
    outcome=timeout
    echo "hil-nightly: step $name timed out after $STEP_TIMEOUT s and was killed" >> "$DIR/$name.log"
  elif [ $rc -gt 128 ] && [ $rc -lt 160 ]; then
    outcome="signal-$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
    case "$outcome" in signal-SIG*) ;; *) outcome="signal-SIG${outcome#signal-}" ;; esac
    echo "hil-nightly: step $name was killed by $((rc - 128)) (${outcome#signal-})" >> "$DIR/$name.log"
  fi
  echo "   $outcome in $took s"
  STEPS+=("$name=$outcome")
  STEP_SECONDS+=" $name=$took"
  tail -n 8 "$DIR/$name.log" | sed 's/^/   /'
  return $rc
}

{ nvidia-smi --query-gpu=name,driver_version,pci.bus_id,memory.total --format=csv 2>&1
  uname -a; grep MemTotal /proc/meminfo; nproc; } > "$DIR/machine.txt"
timeout --kill-after=10 "$STEP_TIMEOUT" "$GPU" bench --backend cuda --sizes 64K --paths pinned --passes 1 > /dev/null 2>&1
if [ $? = 3 ]; then
  echo "hil-nightly: no GPU on this host (resmem-gpu exit 3): run it on a GPU machine" >&2
  exit 3
fi

# 1. The scenario files, the same ones CI runs on the simulator: on the simulator here too and on
#    the GPU (cuda backend: host stand-ins for the reserved range), side by side in the report.
#    Every case that applies on the GPU must pass with the simulator's verdict.
if ! want scenarios; then
  :
elif [ -x "$BIN/resmem" ] && "$BIN/resmem" run --help > /dev/null 2>&1; then
  step scenarios-sim "$BIN/resmem" run --backend sim --json "$DIR/scenarios-sim.json" \
    --junit "$DIR/scenarios-sim.junit.xml" scenarios
  step scenarios "$BIN/resmem" run --backend cuda --verbose --json "$DIR/scenarios.json" \
    --junit "$DIR/scenarios.junit.xml" scenarios
else
  echo "skipped: scenarios (no $BIN/resmem with a run command)" | tee "$DIR/scenarios-skipped.txt"
  STEPS+=("scenarios=skipped")
fi
if want calibrate; then
# 2. Calibration (CAL_RUNS runs: the spread of each bandwidth class) and the fidelity report
#    against the simulator: codes equal in every run, the model's rates inside the spread +-margin.
step calibrate "$GPU" calibrate --backend cuda --runs "$CAL_RUNS" --margin "$CAL_MARGIN" \
  --out "$DIR/profile.json" --passes "$PASSES" \
  --report "$DIR/fidelity.md" --json "$DIR/fidelity.json" --verbose
fi
if want bench; then
# 3. Bench: every path and block size against pinned, every pass verified. 2 MiB pages for the
#    hugetlb stand-in (FACTS.md: nr_hugepages is writable there), given back afterwards.
SAVED_HUGEPAGES=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo)
[ -w /proc/sys/vm/nr_hugepages ] && echo 200 > /proc/sys/vm/nr_hugepages
# NVIDIA's nvbandwidth beside it when carried in --bin (built from its source by
# ci/nvbandwidth/build.sh, never part of this repository): its pinned copy-engine figures at
# bench's largest size are the baseline bench's own pinned row must come within 3% of.
REFERENCE=()
if [ -x "$BIN/nvbandwidth" ]; then
  step nvbandwidth sh -c '"$1" -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -b 256 -i 7 -j > "$2"' \
    sh "$BIN/nvbandwidth" "$DIR/nvbandwidth.json" &&
    REFERENCE=(--nvbandwidth "$DIR/nvbandwidth.json" --nvbandwidth-size 256M)
else
  echo "skipped: nvbandwidth (no $BIN/nvbandwidth: ci/nvbandwidth/build.sh SRC $BIN builds it)" |
    tee "$DIR/nvbandwidth-skipped.txt"
  STEPS+=("nvbandwidth=skipped")
fi
step bench "$GPU" bench --backend cuda --passes "$PASSES" --json "$DIR/bench.json" \
  --plot "$DIR/bench.png" --verbose "${REFERENCE[@]}"
# Registration time per GiB (issue 11): touched and untouched, 4 KiB, THP and hugetlb pages; the
# 2 MiB pool covers the 8 GiB case.
[ -w /proc/sys/vm/nr_hugepages ] && echo 4200 > /proc/sys/vm/nr_hugepages
step registration "$GPU" bench --registration --backend cuda --reg-sizes 1G,8G \
  --reg-backings anon,anon-thp,memfd,hugetlb-2m --json "$DIR/registration.json"
[ -n "$SAVED_HUGEPAGES" ] && [ -w /proc/sys/vm/nr_hugepages ] && echo "$SAVED_HUGEPAGES" > /proc/sys/vm/nr_hugepages
fi
if want stream; then
# 4. Stream: seed 000's 16 MB at 10 Hz; flat out (registered stand-in); flat out staged (disk
#    file stand-in, whose registration the driver refuses).
step stream-rate "$GPU" stream --backend cuda --block 16M --rate 10 --blocks "$BLOCKS_RATE" \
  --json "$DIR/stream-rate.json"
step stream-flat "$GPU" stream --backend cuda --block 16M --rate 0 --blocks "$BLOCKS_FLAT" \
  --json "$DIR/stream-flat.json"
step stream-staged "$GPU" stream --backend cuda --block 16M --rate 0 --blocks "$BLOCKS_FLAT" \
  --host file --json "$DIR/stream-staged.json"
fi

# 5. Verdict and report.
STEP_SECONDS="$STEP_SECONDS" python3 - "$DIR" "$THRESHOLDS" "$STEP_SET" "${STEPS[@]}" <<'PY'
import json, os, sys, traceback
import xml.etree.ElementTree as ET
def writer_failed(*exc):  # exit 5, apart from the verdicts 0/1/4: the shell then writes the report
    traceback.print_exception(*exc)
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(5)
sys.excepthook = writer_failed
d, thr_path, step_set, steps = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4:]
thr = json.load(open(thr_path))
unreadable = []
def load(name):  # None when absent; a step that crashed may leave it half written
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    try:
        return json.load(open(p))
    except (ValueError, OSError) as e:
        unreadable.append(f"{name} unreadable ({e.__class__.__name__}: {e})")
        return None
bench, fid = load("bench.json"), load("fidelity.json")
streams = {k: load(f"stream-{k}.json") for k in ("rate", "flat", "staged")}
fails, lines, incomplete, judged = [], [], [], []
def check(ok, what, key=None):  # key: the check's name in junit.xml, the same every night
    lines.append(("ok    " if ok else "FAIL  ") + what)
    judged.append((key or what, ok, what))
    if not ok: fails.append(what)
# A step's outcome: its exit code, "timeout", "signal-SIGxxx" (step() in the shell) or "skipped".
for s in steps:
    name, rc = s.split("=", 1)
    if rc == "timeout":
        why = f"step {name} TIMED OUT (killed after the step timeout; see {name}.log)"
    elif rc.startswith("signal-"):
        why = f"step {name} CRASHED ({rc[7:]}; see {name}.log)"
    elif rc not in ("0", "1", "skipped"):
        why = f"step {name} did not run to the end (exit {rc}; see {name}.log)"
    else:
        continue
    incomplete.append(why)
    check(False, why, f"step {name} ran to the end")
# Scenarios: every case that applies on the GPU passes, with the simulator's verdict; enough run.
sc, sc_sim = load("scenarios.json"), load("scenarios-sim.json")
PASSING = ("REPRODUCED", "FIXED", "PASSED")
def key(c): return (c["name"], c["case"])
if "scenarios" in step_set and any(s.startswith("scenarios=") for s in steps) and "scenarios=skipped" not in steps:
    t = thr.get("scenarios", {})
    if not sc:
        check(False, "scenarios.json missing", "scenarios on cuda")
    else:
        cases = sc["scenarios"]
        applies = [c for c in cases if c["verdict"] != "N/A"]
        ran = [c for c in applies if c["verdict"] != "UNAVAILABLE"]
        bad = [c for c in applies if c["verdict"] not in PASSING]
        check(not bad, f"scenarios on cuda: {len(applies) - len(bad)} of the {len(applies)} cases that apply pass" +
              (": not " + ", ".join(f"{c['name']}{' ' + c['case'] if c['case'] else ''} {c['verdict']}" for c in bad) if bad else ""), "scenarios on cuda")
        check(len(ran) >= t.get("run_min", 0), f"scenarios run on cuda (neither N/A nor UNAVAILABLE): {len(ran)} of {len(cases)} cases (min {t.get('run_min', 0)})", "scenarios run on cuda")
        sim = {key(c): c["verdict"] for c in (sc_sim or {}).get("scenarios", [])}
        if sc_sim is None:
            check(False, "scenarios-sim.json missing: no simulator run beside the GPU run", "scenarios with the simulator's verdict")
        else:
            differ = [c for c in ran if c["verdict"] in PASSING and sim.get(key(c)) != c["verdict"]]
            check(not differ, f"scenarios: the {len(ran)} cases run on cuda have the simulator's verdict" +
                  (": not " + ", ".join(f"{c['name']} (sim {sim.get(key(c))}, cuda {c['verdict']})" for c in differ) if differ else ""), "scenarios with the simulator's verdict")
        with open(os.path.join(d, "scenarios.log"), "a") as log:
            log.write(f"\ncases run on the GPU machine (neither N/A nor UNAVAILABLE): {len(ran)} of {len(cases)}; "
                      f"passed {len(applies) - len(bad)}; N/A {len(cases) - len(applies)}\n")
if "bench" not in step_set:
    pass
elif bench:
    cells = bench["cells"]; top = max(c["size"] for c in cells)
    for path, thr_key in (("registered-direct", "registered_direct_ratio_min"), ("registered-hugetlb", "registered_direct_ratio_min"), ("staged", "staged_ratio_min")):
        for dr in ("H2D", "D2H"):
            c = [c for c in cells if c["path"] == path and c["direction"] == dr and c["size"] == top]
            r = c[0]["ratio_to_pinned"] if c else 0
            check(r >= thr["bench"][thr_key], f"bench {path} {dr} {top>>20} MiB: {100*r:.1f}% of pinned (min {100*thr['bench'][thr_key]:.0f}%)", f"bench {path} {dr} largest size")
    bad = sum(c["verify_failures"] for c in cells)
    check(bad <= thr["bench"]["verify_failures_max"], f"bench data verification failures: {bad}", "bench data verification")
    # A baseline that cannot be trusted makes every ratio above meaningless (engine/bench/bench.h).
    why = bench.get("unreliable_reasons", [])
    check(not why, "bench baseline reliable" + (f": {len(why)} cell(s) outside the limits: " + "; ".join(why) if why else
          (f" (pinned checked against {bench['reference']['source']})" if bench.get("reference") else " (no nvbandwidth here to check the pinned row against)")), "bench baseline reliable")
else:
    check(False, "bench.json missing", "bench")
for k, s in streams.items():
    if "stream" not in step_set: break
    t = thr[f"stream_{k}"]
    if not s:
        check(False, f"stream-{k}.json missing", f"stream {k}"); continue
    if "dropped_max" in t: check(s["dropped"] <= t["dropped_max"], f"stream {k}: dropped {s['dropped']}", f"stream {k} dropped")
    check(s["corrupt"] <= t["corrupt_max"], f"stream {k}: corrupt {s['corrupt']}", f"stream {k} corrupt")
    check(s.get("failed", 0) == 0, f"stream {k}: failed {s.get('failed', 0)} (blocks whose copy failed every try)", f"stream {k} failed blocks")
    if "ratio_min" in t:
        check(s["ratio_to_pinned"] >= t["ratio_min"], f"stream {k}: {s['gbps']:.2f} GB/s = {100*s['ratio_to_pinned']:.1f}% of pinned (min {100*t['ratio_min']:.0f}%)", f"stream {k} ratio to pinned")
if "calibrate" not in step_set:
    pass
elif fid:
    n = len(fid["disagreements"])
    check(n <= thr["fidelity"]["disagreements_max"], f"fidelity: {n} disagreements with the simulator ({fid['code_cases']} code cases, {fid['bandwidth_cases']} bandwidth classes over {fid.get('runs', 1)} runs, margin {100 * fid.get('margin', 0.15):.0f}%)", "fidelity disagreements")
else:
    check(False, "fidelity.json missing", "fidelity disagreements")
for u in unreadable:
    incomplete.append(u)
    check(False, u, u.split(" unreadable")[0] + " readable")
summary = {"report": d, "complete": not incomplete, "incomplete": incomplete,
           "steps": steps, "checks": lines, "regressions": fails,
           "bench_headline": bench.get("headline") if bench else None,
           "streams": streams}
json.dump(summary, open(os.path.join(d, "summary.json"), "w"), indent=1)
# junit.xml (ci/junit/junit.xsd, the shape GitLab and Jenkins read): a testsuite of the steps (a
# step's exit 1 a failure: its own checks failed; a crash, a timeout or another exit an error;
# skipped with why) and one of the thresholds (a check each, named the same every night).
def suite(name, cases):
    el = ET.Element("testsuite", name=name, tests=str(len(cases)), failures="0", errors="0", skipped="0")
    for case in cases:
        el.append(case)
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            if case.find(tag) is not None: el.set(attr, str(int(el.get(attr)) + 1))
    el.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")
    return el
took = dict(x.split("=", 1) for x in os.environ.get("STEP_SECONDS", "").split())
step_cases = []
for s in steps:
    name, rc = s.split("=", 1)
    c = ET.Element("testcase", name=name, classname="hil-nightly.steps", time=took.get(name, "0"))
    log = f"see {name}-skipped.txt in {d}" if rc == "skipped" else f"see {name}.log in {d}"
    if rc == "skipped":
        why_file = os.path.join(d, f"{name}-skipped.txt")
        ET.SubElement(c, "skipped", message=open(why_file).read().strip() if os.path.exists(why_file) else "skipped")
    elif rc == "1":
        ET.SubElement(c, "failure", message=f"exit 1: the step's own checks failed ({log})", type="exit 1")
    elif rc != "0":
        why = [w for w in incomplete if w.startswith(f"step {name} ")]
        ET.SubElement(c, "error", message=why[0] if why else f"exit {rc} ({log})", type=rc)
    ET.SubElement(c, "system-out").text = f"{name}: {rc} in {took.get(name, '?')} s ({log})"
    step_cases.append(c)
threshold_cases = []
for key_, ok, what in judged:
    c = ET.Element("testcase", name=key_, classname="hil-nightly.thresholds", time="0")
    if not ok: ET.SubElement(c, "failure", message=what, type="regression")
    ET.SubElement(c, "system-out").text = what + f" (thresholds: {thr_path})"
    threshold_cases.append(c)
root = ET.Element("testsuites", name=f"resmem hil-nightly {os.path.basename(d)}")
for el in (suite("hil-nightly.steps", step_cases), suite("hil-nightly.thresholds", threshold_cases)):
    root.append(el)
for attr in ("tests", "failures", "errors", "skipped"):
    root.set(attr, str(sum(int(el.get(attr)) for el in root)))
root.set("time", f"{sum(float(el.get('time')) for el in root):.3f}")
ET.indent(root)
ET.ElementTree(root).write(os.path.join(d, "junit.xml"), encoding="UTF-8", xml_declaration=True)
md = [f"# resmem hardware-in-the-loop report {os.path.basename(d)}", ""]
if os.path.exists(os.path.join(d, "machine.txt")):
    md += ["## Machine", "```", open(os.path.join(d, "machine.txt")).read().strip(), "```", ""]
if incomplete:
    md += ["## INCOMPLETE", "", "This run did not finish every step; the checks below judge what ran.", ""]
    md += [f"- {w}" for w in incomplete] + [""]
md += ["## Verdict", "", "**PASS**" if not fails else f"**REGRESSION** ({len(fails)})", ""]
md += ["```"] + lines + ["```", "", "## Steps", ""] + [f"- {s}" for s in steps] + [""]
if sc:
    sim = {key(c): c["verdict"] for c in (sc_sim or {}).get("scenarios", [])}
    md += ["## Scenarios (the same files on the simulator and on the GPU)", "",
           "| scenario | case | kind | sim | cuda | on cuda |", "|---|---|---|---|---|---|"]
    for c in sc["scenarios"]:
        detail = (c["headline"] if c["verdict"] in PASSING else c["reason"]).replace("|", "/")
        md.append(f"| {c['name']} | {c['case'] or '-'} | {c['kind']} | {sim.get(key(c), '-')} | {c['verdict']} | {detail} |")
    md += ["", "Cases per verdict on cuda:", ""]
    for v in ("REPRODUCED", "FIXED", "PASSED", "FAILED", "ERROR", "UNAVAILABLE", "N/A"):
        names = [c["name"] + (f" [{c['case']}]" if c["case"] else "") for c in sc["scenarios"] if c["verdict"] == v]
        if names: md.append(f"- {v} ({len(names)}): " + ", ".join(names))
    md.append("")
if bench:
    md += ["## Bench (GB/s, medians of passes; ratio to cudaMallocHost of the same run)", "",
           "![bench](bench.png)", "", "| path | dir | size | GB/s | % of pinned | verified |", "|---|---|---|---|---|---|"]
    for c in bench["cells"]:
        sz = c["size"]; s = f"{sz>>20} MiB" if sz >= 1<<20 else f"{sz>>10} KiB"
        md.append(f"| {c['path']} | {c['direction']} | {s} | {c['median_gbps']:.2f} | {100*c['ratio_to_pinned']:.1f} | {'ok' if not c['verify_failures'] else 'FAILED'} |")
    md += ["", "Path choices:", ""] + sorted({f"- {c['path']}: {c['choice']}" for c in bench["cells"]}) + [""]
    md += ["Notes:", ""] + [f"- {n}" for n in bench.get("notes", [])] + [""]
    ref = bench.get("reference")
    if ref:
        top = max(c["size"] for c in bench["cells"])
        md += ["Reference: " + ref["source"] + f" at {ref.get('size', 0) >> 20} MiB against bench's pinned row at {top >> 20} MiB:", "",
               "| dir | nvbandwidth GB/s | bench pinned GB/s | bench / nvbandwidth |", "|---|---|---|---|"]
        for dr, g in sorted(ref["gbps"].items()):
            p = [c["median_gbps"] for c in bench["cells"] if c["path"] == "pinned" and c["direction"] == dr and c["size"] == top]
            if p: md.append(f"| {dr} | {g:.2f} | {p[0]:.2f} | {100 * p[0] / g:.1f}% |")
        md.append("")
    for u in bench.get("unreliable_reasons", []):
        md.append(f"- UNRELIABLE: {u}")
reg = load("registration.json")
if reg:
    md += ["", "## Registration time (cudaHostRegister, flags 0)", "",
           "| backing | state | size | s | s/GiB | outcome |", "|---|---|---|---|---|---|"]
    for r in reg["rows"]:
        outcome = "skipped: " + r["skipped"] if r["skipped"] else ("refused: " + r["error"] if r["error"] else "ok")
        md.append(f"| {r['backing']} | {'touched' if r['touched'] else 'untouched'} | {r['size'] >> 30} GiB | {r['register_seconds']:.3f} | {r['register_seconds_per_gib']:.4f} | {outcome.replace('|', '/')} |")
    md.append("")
md += ["## Stream", ""] if "stream" in step_set else []
for k, s in streams.items():
    if s:
        md.append(f"- {k}: {s['delivered']} delivered, {s['dropped']} dropped, {s['corrupt']} corrupt of {s['blocks']} x {s['block_bytes']>>20} MiB at "
                  f"{'flat out' if not s['rate_hz'] else str(s['rate_hz'])+' Hz'} on {s['host_kind']}; {s['gbps']:.2f} GB/s = {100*s['ratio_to_pinned']:.1f}% of pinned "
                  f"({s['pinned_gbps']:.2f}); latency p50 {s['latency_ms']['p50']:.2f} ms, p99 {s['latency_ms']['p99']:.2f} ms, max {s['latency_ms']['max']:.2f} ms; {s['path']}")
if "calibrate" in step_set:
    md += ["", "## Calibration fidelity", "", "See fidelity.md (every disagreement listed) and profile.json.", ""]
if fid:
    if fid.get("bandwidth"):
        md += [f"Bandwidth over {fid.get('runs', 1)} runs (GB/s); agrees when the simulator lies in [min x (1 - {fid['margin']:.2f}), max x (1 + {fid['margin']:.2f})]:", "",
               "| class | dir | size | min | median | max | sim | verdict |", "|---|---|---|---|---|---|---|---|"]
        for b in fid["bandwidth"]:
            sz = b["size"]; s = f"{sz>>20} MiB" if sz >= 1<<20 else f"{sz>>10} KiB"
            md.append(f"| {b['class']} | {b['direction']} | {s} | {b['min_gbps']:.2f} | {b['median_gbps']:.2f} | {b['max_gbps']:.2f} | {b['sim_gbps']:.2f} | {'agrees' if b['inside'] else 'DISAGREES'} |")
        md.append("")
    md += [f"- {x}" for x in fid["disagreements"]] or ["- no disagreements"]
open(os.path.join(d, "report.md"), "w").write("\n".join(md) + "\n")
print("\n".join(lines))
print("hil-nightly:", "PASS" if not fails else f"{len(fails)} regression(s)",
      f"INCOMPLETE ({len(incomplete)} step(s) did not finish)" if incomplete else "")
sys.exit(4 if incomplete else 1 if fails else 0)
PY
rc=$?
if [ $rc != 0 ] && [ $rc != 1 ] && [ $rc != 4 ]; then
  # The report writer itself failed: still leave a report, marked incomplete.
  { echo "# resmem hardware-in-the-loop report $(basename "$DIR")"; echo
    echo "## INCOMPLETE"; echo; echo "The report writer failed (exit $rc; its traceback is in the nightly's output); steps as run:"; echo
    for s in "${STEPS[@]}"; do echo "- $s"; done; } > "$DIR/report.md"
  printf '{"report": "%s", "complete": false, "incomplete": ["report writer failed (exit %s)"]}\n' "$DIR" "$rc" > "$DIR/summary.json"
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" failures="0" errors="1" skipped="0">\n <testsuite name="hil-nightly.report" tests="1" failures="0" errors="1" skipped="0">\n  <testcase name="report writer" classname="hil-nightly.report"><error message="the report writer failed (exit %s); its traceback is in the nightly output" type="exit %s"/></testcase>\n </testsuite>\n</testsuites>\n' "$rc" "$rc" > "$DIR/junit.xml"
  rc=4
fi
echo "hil-nightly: report $DIR/report.md (exit $rc)"
exit $rc
