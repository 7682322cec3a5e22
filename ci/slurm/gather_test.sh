#!/usr/bin/env bash
# ci/slurm/gather.py on a run folder made by hand, with Slurm's commands stood in for by scripts
# that print what Slurm 22.05 printed on the local cluster (`scontrol show job -o` lines,
# `scontrol show node -o`, sacct's "accounting storage is disabled"), and once with sacct
# answering (`sacct -X -n -P` lines, the format sacct(1) documents). Every outcome a task can
# have, each of which must get its row and status: passed, failed (with the failing case named),
# killed at the time limit, cancelled before it started, lost with and without a start, killed by
# a signal, cancelled by scancel after its wrapper recorded the SIGTERM (exit 143: Slurm's word
# and the signal both named), skipped for lack of a GPU, and a HIL step that ran on a node without
# the GPU feature.
set -u
GATHER=$(realpath "$1")
T=${TEST_TMPDIR:-$(mktemp -d)}
R="$T/run"; F="$T/fake"
mkdir -p "$R"/{state,results,shards,hil,logs} "$F"
fails=0
printf 'REPO=%s\nSHARDS=8\nHIL_STEPS=bench,stream\nGPU_CONSTRAINT=gpu\nGPU_GRES=\nDAY=2026-11-23\n' "$T" > "$R/run.env"
printf 'SHARD_JOB=5\nHIL_JOB=4\nGATHER_JOB=6\n' > "$R/jobs.env"
for i in 0 1 2 3 4 5 6 7; do echo "$T/scenarios/s$i.toml" > "$R/shards/$i.list"; done
start() { printf 'node=%s\njob=1\nstart=2026-11-23T07:00:00Z\n' "$2" > "$R/state/$1.start"; }
done_() { printf 'rc=%s\nend=2026-11-23T07:00:05Z\n' "$2" > "$R/state/$1.done"; }
case_json() { printf '{"scenarios": [{"name": "a", "case": "", "verdict": "PASSED"}, {"name": "b", "case": "x", "verdict": "%s"}]}' "$1"; }
start shard-00 cpu1; done_ shard-00 0; case_json FIXED > "$R/results/shard-00.json"
start shard-01 cpu1                                     # Slurm: TIMEOUT
                                                        # shard-02: Slurm: CANCELLED, never started
                                                        # shard-03: nothing anywhere
start shard-04 gpu1                                     # started, no record
start shard-05 gpu1; done_ shard-05 1; case_json FAILED > "$R/results/shard-05.json"
start shard-06 cpu1; done_ shard-06 137
start shard-07 cpu1; done_ shard-07 143                   # Slurm: CANCELLED (scancel)
start hil-bench gpu1; done_ hil-bench 3
start hil-stream cpu1; done_ hil-stream 0

cat > "$F/scontrol" <<'SH'
#!/bin/sh
case "$*" in
  "show node -o")
    echo "NodeName=cpu1 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.50 AvailableFeatures=cpu ActiveFeatures=cpu Gres=(null) NodeAddr=127.0.0.1 State=IDLE"
    echo "NodeName=gpu1 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.50 AvailableFeatures=gpu,h100 ActiveFeatures=gpu,h100 Gres=gpu:h100:1 NodeAddr=127.0.0.1 State=IDLE" ;;
  "show job -o 5")
    echo "JobId=8 ArrayJobId=5 ArrayTaskId=1 JobName=resmem-shards UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:0 RunTime=00:01:00 NodeList=cpu1 BatchHost=cpu1"
    echo "JobId=9 ArrayJobId=5 ArrayTaskId=2 JobName=resmem-shards UserId=root(0) JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:00 NodeList=(null)"
    echo "JobId=10 ArrayJobId=5 ArrayTaskId=7 JobName=resmem-shards UserId=root(0) JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:15 RunTime=00:00:02 NodeList=cpu1 BatchHost=cpu1"
    echo "JobId=5 ArrayJobId=5 ArrayTaskId=0 JobName=resmem-shards UserId=root(0) JobState=COMPLETED Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:01 NodeList=cpu1 BatchHost=cpu1" ;;
  "show job -o 4") ;;
  *) echo "fake scontrol: unexpected: $*" >&2; exit 1 ;;
esac
SH
cat > "$F/sacct" <<'SH'
#!/bin/sh
if [ -n "${FAKE_SACCT:-}" ]; then
  echo "5_0|COMPLETED|0:0|cpu1|2026-11-23T07:00:00|2026-11-23T07:00:01|None"
  echo "5_1|TIMEOUT|0:0|cpu1|2026-11-23T07:00:00|2026-11-23T07:01:00|TimeLimit"
  echo "5_2|CANCELLED by 0|0:0|None assigned|None|2026-11-23T07:00:00|None"
  echo "5_7|CANCELLED by 0|0:15|cpu1|2026-11-23T07:00:00|2026-11-23T07:00:02|None"
  exit 0
fi
echo "Slurm accounting storage is disabled" >&2; exit 1
SH
chmod +x "$F/scontrol" "$F/sacct"

for mode in scontrol sacct; do
  echo "== Slurm's record from $mode"
  if [ $mode = sacct ]; then export FAKE_SACCT=1; fi
  PATH="$F:$PATH" python3 "$GATHER" "$R"
  rc=$?
  echo "gather exit $rc"
  python3 - "$R" "$mode" "$rc" <<'PY' || fails=$((fails + 1))
import json, sys
run, mode, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = json.load(open(run + "/report.json"))
md = open(run + "/report.md").read()
t = {x["name"]: x for x in r["tasks"]}
checks = [
    ("exit 1 (FAIL)", rc == 1 and r["verdict"] == "FAIL"),
    ("record from " + mode, r["slurm_source"] == ("sacct" if mode == "sacct" else "scontrol show job")),
    ("every planned task has a row", len(r["tasks"]) == 10),
    ("shard-00 passed with its cases", t["shard-00"]["status"] == "passed" and t["shard-00"]["cases"] == {"PASSED": 1, "FIXED": 1}),
    ("shard-01 killed at the time limit", t["shard-01"]["status"] == "killed" and "time limit" in t["shard-01"]["detail"] and t["shard-01"]["slurm_state"] == "TIMEOUT"),
    ("shard-02 cancelled before start", t["shard-02"]["status"] == "killed" and t["shard-02"]["detail"].startswith("never started, cancelled")),
    ("shard-03 lost, never started", t["shard-03"]["status"] == "lost" and "never started" in t["shard-03"]["detail"] and "no record in Slurm" in t["shard-03"]["detail"]),
    ("shard-04 lost after its start", t["shard-04"]["status"] == "lost" and "started on gpu1" in t["shard-04"]["detail"]),
    ("shard-05 failed, case named", t["shard-05"]["status"] == "failed" and "b [x] FAILED" in t["shard-05"]["detail"]),
    ("shard-06 killed by SIGKILL", t["shard-06"]["status"] == "killed" and "signal 9 (SIGKILL)" in t["shard-06"]["detail"]),
    ("shard-07 cancelled by scancel, its SIGTERM named", t["shard-07"]["status"] == "killed"
     and t["shard-07"]["detail"].startswith("cancelled (scancel): its command was killed by signal 15 (SIGTERM)")),
    ("hil-bench skipped: no GPU, on gpu1", t["hil-bench"]["status"] == "skipped" and t["hil-bench"]["on_gpu_node"] is True),
    ("hil-stream off the GPU nodes", t["hil-stream"]["on_gpu_node"] is False and "does not meet the GPU request" in t["hil-stream"]["detail"]
     and r["hil_on_gpu_nodes"] == "1 of 2"),
    ("files of killed/lost shards named", sorted(r["scenario_files_not_run"]) == ["scenarios/s%d.toml" % i for i in (1, 2, 3, 4, 6, 7)]),
    ("report.md names the misplaced step", "NOT hil-stream on cpu1" in md),
]
for what, ok in checks:
    print(("ok   " if ok else "FAIL ") + what)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
done
echo "== bad usage"
python3 "$GATHER" "$T/nowhere" 2> "$T/err"; rc=$?
[ $rc = 2 ] && grep -q "usage: gather.py RUN" "$T/err" && echo "ok   a folder without run.env: exit 2 with usage" ||
  { echo "FAIL bad usage: exit $rc: $(cat "$T/err")"; fails=$((fails + 1)); }
echo "gather_test: $fails failed"
exit $((fails > 0))
