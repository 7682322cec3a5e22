#!/usr/bin/env bash
# The scenario matrix and the HIL nightly's steps through a real one-machine Slurm cluster
# (ci/slurm/local-cluster.sh: munged, slurmctld, slurmd cpu1 with Feature=cpu, slurmd gpu1 with
# Feature=gpu,h100), submitted by ci/slurm/submit.sh and gathered by ci/slurm/gather.py:
#   1. a clean run (ci/hil-nightly.sh --quick --slurm, with the kmod+cuda run): every shard
#      passes, the shards together give the same cases and verdicts as one direct
#      `resmem run scenarios`, and every HIL step (the kmod+cuda run too) ran on gpu1
#      (on the report and on Slurm's own job completion log); here, with no GPU, the HIL steps
#      report "skipped: no GPU", which the report counts as skipped, never as passed;
#   1b. a HIL step asking for a GPU by GRES alone (gpu1 declares Gres=gpu:h100:1) lands on gpu1
#      and gets CUDA_VISIBLE_DEVICES from Slurm;
#   2. a run with two shards killed mid-run, one by scancel, one by SIGKILL of its process: the
#      report names both as killed (Slurm CANCELLED; signal 9), the other shards pass, and the
#      scenario files the killed shards held are listed as not run;
#   3. bad options are named (exit 2, no run folder); a --gpu-constraint no node advertises is
#      refused by sbatch (exit 4) with nothing left queued;
#   4. the cluster is taken down and none of the processes it started is left.
# Prints the node each shard and step ran on. Needs root and slurm-wlm + munge (ci/setup.sh).
set -u
RESMEM=$(realpath "$1")
RESMEM_GPU=$(realpath "$2")
source ci/checks.sh
for b in munged slurmctld slurmd sbatch scancel squeue; do
  command -v $b > /dev/null || { echo "FAIL $b not installed: run ci/setup.sh (it installs slurm-wlm and munge)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "FAIL needs root (slurmd with SlurmUser=root): run the suite as root, as CI does"; exit 1; }

T=${TEST_TMPDIR:-$(mktemp -d)}
W="$T/work"
mkdir -p "$W/ci/slurm" "$W/bin"
cp -L ci/hil-nightly.sh ci/hil-thresholds.json "$W/ci/"
cp -L ci/slurm/*.sh ci/slurm/*.py "$W/ci/slurm/"
cp -rL scenarios "$W/scenarios"
cp -L "$RESMEM" "$W/bin/resmem.real"
cp -L "$RESMEM_GPU" "$W/bin/resmem-gpu"
# The test's resmem: the real one, except that a shard named in bin/hold hangs (exec sleep, so the
# shard's resmem process is the one that is killed) after writing its pid to bin/held-N.pid.
cat > "$W/bin/resmem" <<'SH'
#!/bin/sh
d=$(dirname "$0")
if [ "${SLURM_JOB_NAME:-}" = resmem-shards ] && grep -qx "${SLURM_ARRAY_TASK_ID:-x}" "$d/hold" 2>/dev/null; then
  echo $$ > "$d/held-$SLURM_ARRAY_TASK_ID.pid"
  exec sleep 300
fi
exec "$d/resmem.real" "$@"
SH
chmod +x "$W/bin/resmem" "$W/bin/resmem.real" "$W/bin/resmem-gpu"

# The cluster's folder: short, under /tmp (munge's and slurmstepd's unix socket paths must fit 108
# bytes; Bazel's TEST_TMPDIR does not).
C=$(mktemp -d /tmp/resmem-slurm.XXXXXX)
cleanup() {
  trap - EXIT
  echo "== down"
  "$W/ci/slurm/local-cluster.sh" down "$C"
  local left
  left=$("$W/ci/slurm/local-cluster.sh" procs "$C")
  while read -r name pid; do
    if "$W/ci/slurm/local-cluster.sh" alive "$pid"; then bad "$name (pid $pid) still runs after down"
    else ok "$name (pid $pid) stopped"; fi
  done < "$C/pids"
  if [ -n "$left" ]; then bad "processes of the cluster left after down: $left"; else ok "no process of the cluster is left"; fi
  rm -rf "$C"
  echo "slurm_matrix_test: $fails failed"
  exit $((fails > 0))
}
trap cleanup EXIT
trap 'echo "slurm_matrix_test: interrupted"; fails=$((fails + 1)); exit 1' TERM INT

echo "== up"
up=$("$W/ci/slurm/local-cluster.sh" up "$C") || { echo "$up"; bad "the local cluster did not come up"; exit 1; }
echo "$up"
export SLURM_CONF="$C/slurm.conf"
sinfo -N -o '%N %f %t'
cd "$W" || exit 1

# The direct run the matrix must equal, beside run 1 (whose shards leave a core idle while gpu1
# holds one HIL step after another): its result is read once run 1 is over.
"$W/bin/resmem.real" run --json "$T/direct.json" scenarios > /dev/null 2>&1 &
direct_pid=$!

echo "== 1. the nightly as Slurm work: the matrix in 4 shards and the HIL steps (ci/hil-nightly.sh --quick --slurm)"
t0=$(date +%s)
# The nightly's own entry: ci/hil-nightly.sh --slurm hands its options to ci/slurm/submit.sh --nightly.
# --kmod adds the kmod+cuda run; no node here advertises `resmem` (no module loads on this host),
# so it asks for `gpu` alone and is skipped where it lands.
ci/hil-nightly.sh --bin bin --quick --slurm --out out1 --shards 4 --kmod-constraint gpu --time 10 \
  --wait > "$T/run1.log" 2>&1
rc=$?
cat "$T/run1.log"
echo "run 1: exit $rc in $(( $(date +%s) - t0 )) s"
wait "$direct_pid"
echo "the direct run: exit $? after $(( $(date +%s) - t0 )) s"
R1=$(ls -d "$W"/out1/*/ | head -1)
python3 - "$R1/report.json" "$T/direct.json" "$C/log/jobcomp.txt" "$rc" <<'PY' || fails=$((fails + 1))
import json, re, sys
rep, direct, jobcomp, rc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), int(sys.argv[4])
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1
shards = [t for t in rep["tasks"] if t["kind"] == "shard"]
hil = [t for t in rep["tasks"] if t["kind"] == "hil"]
for t in shards:
    print(f"     {t['name']} ran on {t['node']} (array task {t['array_task']}, Slurm {t['slurm_state']}): {t['status']}, {t['detail']}")
for t in hil + [t for t in rep["tasks"] if t["kind"] == "kmod"]:
    print(f"     {t['name']} ran on {t['node']} (array task {t['array_task']}, Slurm {t['slurm_state']}): {t['status']}, {t['detail']}")
check(len(shards) == 4 and all(t["status"] == "passed" for t in shards), "every shard passed: " + ", ".join(f"{t['name']} {t['status']}" for t in shards))
want = {}
for c in direct["scenarios"]:
    want[c["verdict"]] = want.get(c["verdict"], 0) + 1
check(rep["matrix_cases"] == want, f"the shards' verdict counts equal one direct run's: {rep['matrix_cases']} vs {want}")
import glob, os
through = sorted((c["name"], c["case"], c["verdict"]) for f in glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "results", "shard-*.json"))
                 for c in json.load(open(f))["scenarios"])
check(through == sorted((c["name"], c["case"], c["verdict"]) for c in direct["scenarios"]),
      f"the shards ran the same {len(through)} cases, each with the direct run's verdict")
check(set(t["node"] for t in shards) <= {"cpu1", "gpu1"}, "shards ran on the cluster's nodes: " + ", ".join(sorted(set(t["node"] for t in shards))))
kmod = [t for t in rep["tasks"] if t["kind"] == "kmod"]
check(len(hil) == 4 and all(t["node"] == "gpu1" for t in hil), "every HIL step ran on gpu1 (the node with Feature=gpu): " + ", ".join(f"{t['name']}@{t['node']}" for t in hil))
check(len(kmod) == 1 and kmod[0]["node"] == "gpu1" and kmod[0]["status"] == "skipped" and "kmod+cuda unavailable" in kmod[0]["detail"],
      "the kmod+cuda run: " + (f"{kmod[0]['node']}, {kmod[0]['status']}, {kmod[0]['detail']}" if kmod else "missing"))
check(all(t["on_gpu_node"] for t in hil + kmod) and rep["hil_on_gpu_nodes"] == "5 of 5", f"report: HIL steps on GPU nodes: {rep['hil_on_gpu_nodes']}")
hil_job = rep["jobs"]["HIL_JOB"]
nodes = re.findall(rf"NodeList=(\S+) [^\n]*ArrayJobId={hil_job} ArrayTaskId=", jobcomp)
kmod_job = rep["jobs"]["KMOD_JOB"]
nodes += re.findall(rf"NodeList=(\S+) [^\n]*ArrayJobId={kmod_job} ArrayTaskId=", jobcomp)
check(len(nodes) == 5 and set(nodes) == {"gpu1"}, f"Slurm's job completion log: HIL array {hil_job} and kmod job {kmod_job} ran on {nodes}")
# No GPU here: the steps are skipped, counted as such, and the verdict is INCOMPLETE (exit 3).
gpu_here = any(t["status"] == "passed" for t in hil)
if not gpu_here:
    check(all(t["status"] == "skipped" and "no GPU" in t["detail"] for t in hil), "HIL steps without a GPU: skipped: no GPU (not passed)")
    check(rep["verdict"] == "INCOMPLETE" and rc == 3, f"verdict {rep['verdict']}, submit --wait exit {rc} (want INCOMPLETE, 3)")
sys.exit(1 if fails else 0)
PY

echo "== 1b. a HIL step placed by GRES alone (--gres gpu:1, no --constraint)"
# Runs 1b and 2 test placement and kills, not the matrix (run 1 has it whole): their shards take
# one small folder, seed-002's 12 files (0.05 s on the simulator), not every file again.
SMALL=scenarios/seed002
ci/slurm/submit.sh --bin bin --out out1b --shards 1 --scenarios "$SMALL" --steps bench --quick --gpu-constraint '' \
  --gres gpu:1 --time 10 --wait > "$T/run1b.log" 2>&1
rc=$?
grep -E "^\| (hil|shard)" "$T/run1b.log"
python3 - "$(ls -d "$W"/out1b/*/ | head -1)report.json" "$rc" <<'PY' || fails=$((fails + 1))
import json, sys
rep, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
h = [t for t in rep["tasks"] if t["kind"] == "hil"]
for t in rep["tasks"]:
    print(f"     {t['name']} ran on {t['node']} (array task {t['array_task']}, Slurm {t['slurm_state']}): {t['status']}, {t['detail']}")
ok = len(h) == 1 and h[0]["node"] == "gpu1" and h[0]["gpus"] == "0" and h[0]["on_gpu_node"] and rc in (0, 3)
print(("ok   " if ok else "FAIL ") + f"--gres gpu:1 placed hil-bench on {h[0]['node'] if h else '-'} with CUDA_VISIBLE_DEVICES={h[0]['gpus'] if h else '-'} (exit {rc})")
sys.exit(0 if ok else 1)
PY

echo "== 2. two shards killed mid-run: shard 1 by scancel, shard 2 by SIGKILL of its resmem process"
printf '1\n2\n' > "$W/bin/hold"
t0=$(date +%s)
ci/slurm/submit.sh --bin bin --out out2 --shards 4 --scenarios "$SMALL" --time 10 > "$T/run2.log" 2>&1 || bad "submit (run 2) exit $?"
cat "$T/run2.log"
R2=$(ls -d "$W"/out2/*/ | head -1)
. "$R2/jobs.env"
for _ in $(seq 120); do [ -s "$W/bin/held-1.pid" ] && [ -s "$W/bin/held-2.pid" ] && break; sleep 0.5; done
if [ -s "$W/bin/held-1.pid" ] && [ -s "$W/bin/held-2.pid" ]; then
  squeue -o '%i %j %T %N'
  scancel "${SHARD_JOB}_1" && echo "scancel ${SHARD_JOB}_1 (shard 1, running)"
  kill -9 "$(cat "$W/bin/held-2.pid")" && echo "kill -9 $(cat "$W/bin/held-2.pid") (shard 2's resmem)"
else
  bad "the held shards did not start within 60 s"
  squeue
fi
for _ in $(seq 180); do [ -z "$(squeue -h -j "$GATHER_JOB" -o %i 2>/dev/null)" ] && break; sleep 0.5; done
echo "run 2: gathered in $(( $(date +%s) - t0 )) s"
cat "$R2/logs/gather.out"
python3 - "$R2/report.json" "$R2/report.md" <<'PY' || fails=$((fails + 1))
import json, sys
rep, md = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1
t = {x["name"]: x for x in rep["tasks"]}
for x in rep["tasks"]:
    print(f"     {x['name']} ran on {x['node']} (array task {x['array_task']}, Slurm {x['slurm_state']}): {x['status']}, {x['detail']}")
s1, s2 = t["shard-01"], t["shard-02"]
check(s1["status"] == "killed" and s1["slurm_state"] == "CANCELLED" and "cancelled" in s1["detail"], f"scancel'd shard-01 reported killed: {s1['slurm_state']}: {s1['detail']}")
check(s2["status"] == "killed" and "signal 9" in s2["detail"] and s2["exit"] == 137, f"SIGKILLed shard-02 reported killed: exit {s2['exit']}: {s2['detail']}")
check(t["shard-00"]["status"] == "passed" and t["shard-03"]["status"] == "passed", "the other shards passed")
check(rep["verdict"] == "FAIL", f"verdict {rep['verdict']} (want FAIL)")
lost = s1["files"] + s2["files"]
check(lost and sorted(rep["scenario_files_not_run"]) == sorted(lost), f"the killed shards' {len(lost)} scenario files listed as not run")
check("| shard-01 |" in md and "| killed |" in md and "Scenario files not run" in md, "report.md names the killed shards and the files not run")
sys.exit(1 if fails else 0)
PY

echo "== 3. bad input: named, exit 2, nothing submitted; a constraint no node advertises is refused"
for bad_args in "--shards 0|--shards takes 1-64" "--nightly --steps bench,tea|unknown HIL step 'tea'" \
                "--bin nowhere|nowhere/resmem not found" "--time 0|--time takes minutes"; do
  IFS='|' read -r a want <<< "$bad_args"
  # shellcheck disable=SC2086
  out=$(ci/slurm/submit.sh --bin bin --out out3 $a 2>&1); rc=$?
  if [ $rc = 2 ] && grep -qF -- "$want" <<< "$out"; then ok "submit $a: exit 2: $out"
  else bad "submit $a: exit $rc, want 2 and '$want': $out"; fi
done
out=$(ci/slurm/submit.sh --bin bin --out out3 --nightly --gpu-constraint '' 2>&1); rc=$?
if [ $rc = 2 ] && grep -qF -- "needs --gres" <<< "$out"; then ok "submit --gpu-constraint '' without --gres: exit 2: $out"
else bad "submit --gpu-constraint '' without --gres: exit $rc, want 2: $out"; fi
[ -d out3 ] && bad "bad input left a run folder: $(ls out3)"
rm -f "$W/bin/hold"
before=$(squeue -h -o %i | wc -l)
ci/slurm/submit.sh --bin bin --out out3 --nightly --gpu-constraint tpu --time 10 > "$T/run3.log" 2>&1
rc=$?
cat "$T/run3.log"
after=$(squeue -h -o %i | wc -l)
if [ $rc = 4 ] && grep -q "sbatch refused resmem-hil" "$T/run3.log" && [ "$after" = "$before" ]; then
  ok "--gpu-constraint tpu: refused (exit 4), $after jobs queued before and after"
else
  bad "--gpu-constraint tpu: exit $rc, queued $before -> $after (want 4 and nothing left)"
fi
