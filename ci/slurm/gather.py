#!/usr/bin/env python3
"""Gathers one run of ci/slurm/submit.sh into one dated report: RUN/report.md and RUN/report.json.

  ci/slurm/gather.py RUN

submit.sh runs it as the last job (afterany: after every task has ended, however it ended); it can
be run again by hand. Every task the run planned (RUN/run.env: SHARDS shards and the HIL_STEPS) gets
a row, whether or not it left a result: its node, Slurm's state and exit code, and a status:
  passed      the task's command ran to its end and passed
  failed      it ran to its end and failed (cases failed, a regression, bad input)
  skipped     a HIL step on a host where resmem-gpu finds no GPU (the nightly's exit 3), or the
              kmod+cuda run where that backend is unavailable (no module loaded, no GPU: exit 3)
  killed      it started and was ended from outside: scancel, the time limit, a node failure, a
              signal (Slurm's state and reason, or the signal, are named)
  lost        no result and nothing says why: never started, or started and no record remains
Sources: the task's own state files (RUN/state/NAME.start and .done, written by ci/slurm/task.sh)
and Slurm's record of each array task (sacct where the cluster keeps accounting, otherwise
`scontrol show job`, which slurmctld keeps for MinJobAge seconds after a job ends).
Verdict: PASS (every task passed), INCOMPLETE (nothing failed, but HIL steps were skipped),
FAIL (a task failed, was killed or was lost). Exit 0, 3, 1 respectively; 2 bad usage.
"""
import json
import os
import re
import shlex
import subprocess
import sys

SIGNALS = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
# Slurm job states that mean "ended from outside" (squeue(1), JOB STATE CODES).
KILLED_STATES = {"CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "DEADLINE", "BOOT_FAIL"}
# How Slurm ended a task, in the report's words (others: the state in lower case).
KILLED_HOW = {"CANCELLED": "cancelled (scancel)", "TIMEOUT": "killed at its time limit",
              "NODE_FAIL": "its node failed", "OUT_OF_MEMORY": "killed: out of memory",
              "PREEMPTED": "preempted"}


def read_env(path):
    """KEY=VALUE lines as written by submit.sh (printf %q values)."""
    env = {}
    if os.path.exists(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                parts = shlex.split(v) if v else [""]
                env[k] = parts[0] if parts else ""
    return env


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, "", str(e)


def slurm_records(job_ids):
    """{(array_job, task_id): {state, exit, node, reason, start, end}} and the source used."""
    recs = {}
    ids = [j for j in job_ids if j]
    if not ids:
        return recs, "none"
    rc, out, err = run(["sacct", "-j", ",".join(ids), "-X", "-n", "-P",
                        "-o", "JobID,State,ExitCode,NodeList,Start,End,Reason"])
    if rc == 0 and out.strip():
        for line in out.splitlines():
            f = line.split("|")
            m = re.match(r"^(\d+)_(\d+)$", f[0])
            if not m:
                continue
            recs[(m.group(1), int(m.group(2)))] = {
                "state": f[1].split()[0], "exit": f[2], "node": f[3], "start": f[4], "end": f[5], "reason": f[6]}
        return recs, "sacct"
    for j in ids:
        rc, out, _ = run(["scontrol", "show", "job", "-o", j])
        for line in out.splitlines():
            kv = dict(re.findall(r"(\w+)=(\S*)", line))
            if "ArrayTaskId" not in kv or not kv["ArrayTaskId"].isdigit():
                continue
            recs[(kv.get("ArrayJobId", j), int(kv["ArrayTaskId"]))] = {
                "state": kv.get("JobState", ""), "exit": kv.get("ExitCode", ""), "node": kv.get("NodeList", ""),
                "start": kv.get("StartTime", ""), "end": kv.get("EndTime", ""), "reason": kv.get("Reason", "")}
    return recs, "scontrol show job"


def slurm_nodes():
    """{node: {"features": [...], "gres": "gpu:h100:1" or ""}} from `scontrol show node`."""
    nodes = {}
    _, out, _ = run(["scontrol", "show", "node", "-o"])
    for line in out.splitlines():
        kv = dict(re.findall(r"(\w+)=(\S*)", line))
        if "NodeName" in kv:
            feats = kv.get("AvailableFeatures", kv.get("Features", ""))
            gres = kv.get("Gres", "")
            nodes[kv["NodeName"]] = {"features": [f for f in feats.split(",") if f and f != "(null)"],
                                     "gres": "" if gres == "(null)" else gres}
    return nodes


def satisfies(features, constraint):
    """Whether a node's features meet an sbatch --constraint of words joined by & or |."""
    if "|" in constraint:
        return any(satisfies(features, c) for c in constraint.split("|"))
    words = [w for w in re.split(r"[&,()\[\]]", constraint) if w]
    return all(w.split("*")[0] in features for w in words)


def classify(kind, rc, slurm, started, node):
    """(status, detail) from the task's exit code (None: no .done file) and Slurm's record."""
    sstate = slurm.get("state", "") if slurm else ""
    sdesc = (f"Slurm: {sstate}" + (f", exit {slurm['exit']}" if slurm.get("exit") else "")
             + (f", reason {slurm['reason']}" if slurm.get("reason") not in ("", "None", None) else "")) if slurm else "no record in Slurm"
    if rc is not None:
        if rc > 128:
            # Slurm's word first where it ended the task: a scancel'd task's wrapper can record
            # its command's SIGTERM (rc 143) before it dies itself, or not (no rc, below).
            sig = rc - 128
            how = f"{KILLED_HOW[sstate]}: " if sstate in KILLED_HOW else ""
            return "killed", f"{how}its command was killed by signal {sig} ({SIGNALS.get(sig, 'signal')}) on {node}; {sdesc}"
        if rc == 0:
            return "passed", ""
        if kind == "hil" and rc == 3:
            return "skipped", f"skipped: no GPU on {node} (resmem-gpu exit 3)"
        if kind == "kmod" and rc == 3:
            return "skipped", f"skipped: backend kmod+cuda unavailable on {node} (resmem run exit 3)"
        what = {"shard": {1: "a case failed", 2: "bad input", 3: "backend unavailable"},
                "kmod": {1: "a case failed", 2: "bad input"},
                "hil": {1: "a regression past the thresholds", 2: "bad usage", 4: "a step did not run to its end"}}
        return "failed", f"exit {rc}: {what[kind].get(rc, 'failed')}"
    if sstate in KILLED_STATES or (sstate == "FAILED" and started):
        how = KILLED_HOW.get(sstate, sstate.lower())
        where = f"started on {node}, " if started else "never started, "
        return "killed", f"{where}{how}; no result; {sdesc}"
    if not started:
        return "lost", f"never started; no result; {sdesc}"
    return "lost", f"started on {node}, no result and no exit recorded; {sdesc}"


def main():
    if len(sys.argv) != 2 or not os.path.exists(os.path.join(sys.argv[1], "run.env")):
        print("usage: gather.py RUN (a run folder of ci/slurm/submit.sh, with run.env)", file=sys.stderr)
        return 2
    run_dir = os.path.abspath(sys.argv[1])
    env = read_env(os.path.join(run_dir, "run.env"))
    jobs = read_env(os.path.join(run_dir, "jobs.env"))
    repo = env.get("REPO", "")
    shards = int(env.get("SHARDS", "0"))
    hil_steps = [s for s in env.get("HIL_STEPS", "").split(",") if s]
    constraint = env.get("GPU_CONSTRAINT", "gpu")
    gres = env.get("GPU_GRES", "")
    asked = " and ".join(x for x in (f"advertising `{constraint}`" if constraint else "",
                                     f"with GRES `{gres}`" if gres else "") if x)
    if jobs.get("KMOD_JOB"):
        asked += f" (the kmod+cuda run: `{env.get('KMOD_CONSTRAINT', '')}`)"
    kmod_constraint = env.get("KMOD_CONSTRAINT", "")
    recs, source = slurm_records([jobs.get("SHARD_JOB"), jobs.get("HIL_JOB"), jobs.get("KMOD_JOB")])
    nodes = slurm_nodes()

    planned = [("shard", i, f"shard-{i:02d}", jobs.get("SHARD_JOB", "")) for i in range(shards)]
    planned += [("hil", i, f"hil-{s}", jobs.get("HIL_JOB", "")) for i, s in enumerate(hil_steps)]
    if jobs.get("KMOD_JOB"):
        planned.append(("kmod", 0, "hil-kmod", jobs["KMOD_JOB"]))
    tasks = []
    matrix = {}
    not_run = []
    for kind, i, name, array_job in planned:
        start = read_env(os.path.join(run_dir, "state", name + ".start"))
        done = read_env(os.path.join(run_dir, "state", name + ".done"))
        slurm = recs.get((array_job, i), {})
        started = bool(start)
        node = start.get("node") or (slurm.get("node") if slurm.get("node") not in ("", "None assigned", "(null)") else "") or "-"
        rc = int(done["rc"]) if done.get("rc", "").lstrip("-").isdigit() else None
        status, detail = classify(kind, rc, slurm, started, node)
        t = {"name": name, "kind": kind, "array_task": f"{array_job}_{i}", "node": node,
             "node_features": nodes.get(node, {}).get("features", []), "gpus": start.get("gpus", ""), "slurm_state": slurm.get("state", "no record"),
             "slurm_exit": slurm.get("exit", ""), "exit": rc, "status": status, "detail": detail,
             "start": start.get("start", ""), "end": done.get("end", "")}
        if kind in ("shard", "kmod"):
            lst = os.path.join(run_dir, "shards", f"{i}.list")
            files = [os.path.relpath(f.strip(), repo) if repo else f.strip() for f in open(lst) if f.strip()] \
                if kind == "shard" and os.path.exists(lst) else []
            if kind == "shard":
                t["files"] = files
            res = os.path.join(run_dir, "results", name + ".json")
            if os.path.exists(res) and rc is not None and rc <= 128:
                try:
                    cases = json.load(open(res))["scenarios"]
                except (ValueError, KeyError) as e:
                    cases = []
                    t["status"], t["detail"] = "failed", f"unreadable result {res}: {e}"
                counts = {}
                for c in cases:
                    counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
                    if kind == "shard":
                        matrix[c["verdict"]] = matrix.get(c["verdict"], 0) + 1
                t["cases"] = counts
                bad = [c["name"] + (f" [{c['case']}]" if c.get("case") else "") + f" {c['verdict']}"
                       for c in cases if c["verdict"] not in ("REPRODUCED", "FIXED", "PASSED")]
                summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
                if kind == "kmod" and t["status"] == "skipped":
                    why = next((c["reason"] for c in cases if c["verdict"] == "UNAVAILABLE" and c.get("reason")), "")
                    t["detail"] = f"{t['detail']}: {why}" if why else t["detail"]
                else:
                    t["detail"] = f"{len(cases)} cases: {summary}" + (f"; not passing: {', '.join(bad)}" if bad else "") + \
                        (f"; {t['detail']}" if t["detail"] else "")
            elif t["status"] in ("killed", "lost"):
                not_run += files
        if kind in ("hil", "kmod"):
            want, want_gres = (constraint, gres) if kind == "hil" else (kmod_constraint, "")
            t["gpu_constraint"] = want
            # Placement: the node meets the constraint, and holds GPU GRES where --gres was asked.
            t["on_gpu_node"] = (satisfies(t["node_features"], want) and
                                (not want_gres or "gpu" in nodes.get(node, {}).get("gres", ""))) if node != "-" else None
            if t["gpus"]:
                t["detail"] += f" (CUDA_VISIBLE_DEVICES={t['gpus']})"
            if t["on_gpu_node"] is False:
                t["detail"] = (t["detail"] + "; " if t["detail"] else "") + \
                    f"ran on {node}, which does not meet the GPU request ({want or want_gres})"
            step_dir = os.path.join(run_dir, "hil", name[4:])
            for root, _, fs in os.walk(step_dir):
                if "summary.json" in fs:
                    try:
                        t["regressions"] = json.load(open(os.path.join(root, "summary.json"))).get("regressions", [])
                        t["report"] = os.path.relpath(os.path.join(root, "report.md"), run_dir)
                    except ValueError:
                        pass
        tasks.append(t)

    by = lambda s: [t for t in tasks if t["status"] == s]
    bad = by("failed") + by("killed") + by("lost")
    verdict = "FAIL" if bad else ("INCOMPLETE" if by("skipped") else "PASS")
    hil = [t for t in tasks if t["kind"] in ("hil", "kmod")]
    misplaced = [t for t in hil if t["on_gpu_node"] is False]
    if misplaced:
        verdict = "FAIL"
    report = {"date": env.get("DAY", ""), "run": run_dir, "verdict": verdict, "slurm_source": source,
              "jobs": jobs, "nodes": nodes, "gpu_constraint": constraint, "gpu_gres": gres,
              "counts": {s: len(by(s)) for s in ("passed", "failed", "skipped", "killed", "lost")},
              "matrix_cases": matrix, "scenario_files_not_run": not_run,
              "hil_on_gpu_nodes": f"{sum(1 for t in hil if t['on_gpu_node'])} of {len(hil)}",
              "tasks": tasks}
    json.dump(report, open(os.path.join(run_dir, "report.json"), "w"), indent=1)

    md = [f"# resmem on Slurm: {env.get('DAY', '')}", "",
          f"Run folder `{run_dir}`; jobs: shards {jobs.get('SHARD_JOB', '-')}"
          + (f", HIL {jobs['HIL_JOB']}" if jobs.get("HIL_JOB") else "")
          + (f", kmod+cuda {jobs['KMOD_JOB']}" if jobs.get("KMOD_JOB") else "") + f", gather {jobs.get('GATHER_JOB', '-')}"
          + f"; Slurm's record from {source}.", "",
          f"## Verdict: **{verdict}**", "",
          "Tasks: " + ", ".join(f"{n} {s}" for s, n in report["counts"].items() if n), ""]
    if matrix:
        md += ["Scenario cases (shards that ran to their end): "
               + ", ".join(f"{n} {v}" for v, n in sorted(matrix.items())), ""]
    if not_run:
        md += [f"Scenario files not run (their shard was killed or lost): {', '.join(not_run)}", ""]
    if hil:
        md += [f"HIL steps on nodes {asked}: {report['hil_on_gpu_nodes']}"
               + (": NOT " + ", ".join(f"{t['name']} on {t['node']}" for t in misplaced) if misplaced else ""), ""]
    md += ["## Nodes", "", "| node | features | GRES |", "|---|---|---|"]
    md += [f"| {n} | {','.join(v['features']) or '-'} | {v['gres'] or '-'} |" for n, v in sorted(nodes.items())]
    md += ["", "## Tasks", "", "| task | array task | node | Slurm state | exit | status | detail |", "|---|---|---|---|---|---|---|"]
    for t in tasks:
        md.append(f"| {t['name']} | {t['array_task']} | {t['node']} | {t['slurm_state']} | "
                  f"{'-' if t['exit'] is None else t['exit']} | {t['status']} | {t['detail'].replace('|', '/')} |")
    for t in hil:
        if t.get("report"):
            md.append(f"\n{t['name']}: the nightly's report [{t['report']}]({t['report']})"
                      + (f"; regressions: {'; '.join(t['regressions'])}" if t.get("regressions") else ""))
    md.append("")
    open(os.path.join(run_dir, "report.md"), "w").write("\n".join(md))
    for t in tasks:
        print(f"{t['name']:<16} node={t['node']:<6} slurm={t['slurm_state']:<10} status={t['status']:<8} {t['detail']}")
    print(f"gather: {verdict}: {run_dir}/report.md")
    return {"PASS": 0, "INCOMPLETE": 3}.get(verdict, 1)


if __name__ == "__main__":
    sys.exit(main())
