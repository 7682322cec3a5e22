#!/usr/bin/env bash
# The scenario matrix (and, with --nightly, the HIL nightly's GPU steps) as Slurm work. Slurm does
# the scheduling; this script only splits and submits:
#   1. a job array over scenario shards: the scenario files split into N shards, each task runs
#      `resmem run --json` on its shard (any node);
#   2. with --nightly, a job array over the HIL steps (scenarios on sim+cuda, calibrate, bench,
#      stream), each task `ci/hil-nightly.sh --steps STEP`, constrained to nodes that advertise a
#      GPU (--constraint, default `gpu`; optionally --gres) and exclusive on its node, so that no
#      other job shares the GPU host while it measures;
#   3. with --kmod, one more task: `resmem run --backend kmod+cuda scenarios/kmod` (the real module
#      with the real GPU) on a node that advertises both a GPU and the loaded module (--kmod-
#      constraint, default 'gpu&resmem'; docs/hil/README.md, "A GPU host that loads the module");
#   4. a gather job (afterany: it runs however the arrays end) writing one dated report,
#      OUT/YYYY-MM-DD/report.md + report.json: each task's node, Slurm state, exit code and status,
#      a killed or lost task named with Slurm's reason (ci/slurm/gather.py).
# The run folder (OUT/YYYY-MM-DD, or .2, .3 when that day already has one) and the binaries must be
# on storage every node sees at the same path (NFS in a lab; one disk on the local cluster).
#
#   ci/slurm/submit.sh [--bin DIR] [--out DIR] [--shards N] [--scenarios PATH] [--backend NAME]
#                      [--nightly] [--steps LIST] [--quick] [--thresholds FILE]
#                      [--kmod] [--kmod-constraint EXPR]
#                      [--gpu-constraint EXPR] [--gres SPEC] [--gpu-node NAME] [--partition P]
#                      [--time MIN] [--sbatch-arg ARG]... [--wait]
#     --bin DIR            holds resmem (//engine/cli:resmem) and, for --nightly, resmem-gpu
#                          (//engine/cli:resmem-gpu); a release dir with usr/bin works too;
#                          default .carry of this checkout
#     --out DIR            report root (default out/slurm of this checkout)
#     --shards N           scenario shards, 1-64 (default 4)
#     --scenarios PATH     scenario folder or file (default scenarios/ of this checkout)
#     --backend NAME       the shards' `resmem run --backend` (default sim)
#     --nightly            add the HIL steps, run on GPU nodes
#     --steps LIST         HIL steps, a comma list of scenarios,calibrate,bench,stream (implies
#                          --nightly; default all four)
#     --quick              the nightly's smoke mode (fewer passes)
#     --thresholds FILE    the nightly's thresholds (default ci/hil-thresholds.json of this checkout)
#     --kmod               add the kmod+cuda scenario run (scenarios/kmod) on a GPU host with the
#                          module loaded
#     --kmod-constraint E  sbatch --constraint for it (default 'gpu&resmem': a lab gives the hosts
#                          that boot with memmap= and load resmem.ko the feature `resmem`)
#     --gpu-constraint E   sbatch --constraint for HIL steps (default gpu; e.g. 'gpu&h100'; ''
#                          for none, with --gres)
#     --gres SPEC          also sbatch --gres for HIL steps (e.g. gpu:1 where nodes declare Gres;
#                          Slurm then sets CUDA_VISIBLE_DEVICES, recorded in the report)
#     --gpu-node NAME      run every HIL step on this one node (sbatch --nodelist)
#     --partition P        sbatch --partition for every job (default: the cluster's default)
#     --time MIN           time limit of each task in minutes (default 60): a task past it is
#                          killed by Slurm and reported as TIMEOUT
#     --sbatch-arg ARG     passed to every sbatch (repeatable; e.g. --sbatch-arg=--account=lab)
#     --wait               wait for the gather job, print the report, exit with its verdict
# Prints the run folder and the job ids (also in RUN/jobs.env).
# Exit: 0 submitted (with --wait: the report says PASS), 1 (--wait) a task failed, was killed or
#       lost, 2 bad usage, 3 (--wait) nothing failed but HIL steps were skipped (no GPU),
#       4 sbatch refused a job (its message is printed; nothing is left queued).
set -u
# Paths given as options are taken from the current folder; the defaults lie in the checkout.
REPO=$(cd "$(dirname "$0")/../.." && pwd -P) || exit 2
BIN=$REPO/.carry; OUT=$REPO/out/slurm; SHARDS=4; SCEN=$REPO/scenarios; BACKEND=sim
NIGHTLY=0; STEPS=""; QUICK=0; THRESHOLDS=$REPO/ci/hil-thresholds.json
KMOD=0; KMOD_CONSTRAINT='gpu&resmem'; CONSTRAINT=gpu; GRES=""; GPU_NODE=""; PARTITION=""
TIME=60; WAIT=0; EXTRA=()
die() { echo "submit: $*" >&2; exit 2; }
arg() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) arg "$@"; BIN=$2; shift 2 ;;
    --out) arg "$@"; OUT=$2; shift 2 ;;
    --shards) arg "$@"; SHARDS=$2; shift 2 ;;
    --scenarios) arg "$@"; SCEN=$2; shift 2 ;;
    --backend) arg "$@"; BACKEND=$2; shift 2 ;;
    --nightly) NIGHTLY=1; shift ;;
    --steps) arg "$@"; STEPS=$2; NIGHTLY=1; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --kmod) KMOD=1; shift ;;
    --kmod-constraint) arg "$@"; KMOD_CONSTRAINT=$2; KMOD=1; shift 2 ;;
    --thresholds) arg "$@"; THRESHOLDS=$2; shift 2 ;;
    --gpu-constraint) arg "$@"; CONSTRAINT=$2; shift 2 ;;
    --gres) arg "$@"; GRES=$2; shift 2 ;;
    --gpu-node) arg "$@"; GPU_NODE=$2; shift 2 ;;
    --partition) arg "$@"; PARTITION=$2; shift 2 ;;
    --time) arg "$@"; TIME=$2; shift 2 ;;
    --sbatch-arg=*) EXTRA+=("${1#--sbatch-arg=}"); shift ;;
    --sbatch-arg) arg "$@"; EXTRA+=("$2"); shift 2 ;;
    --wait) WAIT=1; shift ;;
    -h|--help) sed -n '2,51p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ $SHARDS =~ ^[0-9]+$ ]] && ((SHARDS >= 1 && SHARDS <= 64)) || die "--shards takes 1-64, got '$SHARDS'"
[[ $TIME =~ ^[0-9]+$ ]] && ((TIME >= 1)) || die "--time takes minutes (a whole number >= 1), got '$TIME'"
[ -d "$BIN/usr/bin" ] && BIN="$BIN/usr/bin"
BIN=$(realpath -m "$BIN")
RESMEM="$BIN/resmem"
[ -x "$RESMEM" ] || die "$RESMEM not found: build //engine/cli:resmem and copy it to $BIN (or give --bin)"
if ((NIGHTLY)); then
  STEPS=${STEPS:-scenarios,calibrate,bench,stream}
  for s in ${STEPS//,/ }; do
    case "$s" in scenarios|calibrate|bench|stream) ;;
      *) die "unknown HIL step '$s' in --steps (scenarios, calibrate, bench, stream)" ;;
    esac
  done
  [ -x "$BIN/resmem-gpu" ] || die "$BIN/resmem-gpu not found: --nightly needs //engine/cli:resmem-gpu in --bin"
  [ -f "$THRESHOLDS" ] || die "thresholds $THRESHOLDS not found"
  THRESHOLDS=$(realpath "$THRESHOLDS")
fi
[ -e "$SCEN" ] || die "scenarios $SCEN not found"
((KMOD)) && [ -z "$KMOD_CONSTRAINT" ] && die "--kmod-constraint needs a feature expression (e.g. 'gpu&resmem')"
((KMOD)) && [ ! -d "$REPO/scenarios/kmod" ] && die "$REPO/scenarios/kmod not found (the --kmod scenarios)"
((NIGHTLY)) && [ -z "$CONSTRAINT" ] && [ -z "$GRES" ] &&
  die "--gpu-constraint '' needs --gres: HIL steps must ask for a GPU node one way or the other"
for b in sbatch scontrol; do
  command -v $b > /dev/null || die "$b not found: this needs a Slurm client (Debian: slurm-client) configured for the cluster"
done

# The scenario files, sorted, dealt round-robin into the shards (the same split every night).
mapfile -t FILES < <(if [ -d "$SCEN" ]; then find "$(realpath "$SCEN")" -name '*.toml' | sort; else realpath "$SCEN"; fi)
((${#FILES[@]} > 0)) || die "no *.toml scenario files under $SCEN"
((SHARDS > ${#FILES[@]})) && SHARDS=${#FILES[@]}

DAY=$(date -u +%Y-%m-%d)
mkdir -p "$OUT" || die "cannot create $OUT"
RUN=$(realpath "$OUT")/$DAY
n=2; while [ -e "$RUN" ]; do RUN=$(realpath "$OUT")/$DAY.$n; n=$((n + 1)); done
mkdir -p "$RUN"/{shards,state,results,hil,logs}
for ((i = 0; i < ${#FILES[@]}; i++)); do echo "${FILES[$i]}" >> "$RUN/shards/$((i % SHARDS)).list"; done
{ printf 'REPO=%q\nBIN=%q\nRESMEM=%q\nSHARDS=%q\nSHARD_BACKEND=%q\n' "$REPO" "$BIN" "$RESMEM" "$SHARDS" "$BACKEND"
  printf 'HIL_STEPS=%q\nQUICK=%q\nTHRESHOLDS=%q\nGPU_CONSTRAINT=%q\nGPU_GRES=%q\nDAY=%q\n' "$STEPS" "$QUICK" "$THRESHOLDS" "$CONSTRAINT" "$GRES" "$DAY"
  printf 'KMOD_CONSTRAINT=%q\n' "$([ "$KMOD" = 1 ] && echo "$KMOD_CONSTRAINT")"
} > "$RUN/run.env"

common=(--parsable --chdir "$RUN" "${EXTRA[@]}")
[ -n "$PARTITION" ] && common+=(--partition "$PARTITION")
JOBS=()  # what this run has queued so far: cancelled when a later sbatch is refused
cancel_all() { ((${#JOBS[@]})) && scancel "${JOBS[@]}" 2> /dev/null; }
submit() {  # submit NAME SBATCH-ARGS...: prints the job id, or exits 4 with sbatch's message
  local name=$1 id; shift
  if ! id=$(sbatch "${common[@]}" --job-name "$name" "$@" 2> "$RUN/logs/sbatch-$name.err"); then
    echo "submit: sbatch refused $name: $(cat "$RUN/logs/sbatch-$name.err")" >&2
    cancel_all; exit 4
  fi
  echo "${id%%;*}"
}
# The HIL array first: the one a cluster most likely refuses (no node with the constraint), and
# then nothing is queued.
HIL_JOB=""
if ((NIGHTLY)); then
  IFS=, read -r -a steps <<< "$STEPS"
  gpu=(--exclusive)
  [ -n "$CONSTRAINT" ] && gpu+=(--constraint "$CONSTRAINT")
  [ -n "$GRES" ] && gpu+=(--gres "$GRES")
  [ -n "$GPU_NODE" ] && gpu+=(--nodelist "$GPU_NODE")
  HIL_JOB=$(submit resmem-hil --array "0-$((${#steps[@]} - 1))" --ntasks 1 --time "$TIME" "${gpu[@]}" \
    --output "$RUN/logs/hil-%a.out" "$REPO/ci/slurm/task.sh" "$RUN" hil) || exit $?
  JOBS+=("$HIL_JOB")
fi
KMOD_JOB=""
if ((KMOD)); then
  KMOD_JOB=$(submit resmem-kmod --array 0 --ntasks 1 --time "$TIME" --exclusive \
    --constraint "$KMOD_CONSTRAINT" ${GPU_NODE:+--nodelist "$GPU_NODE"} \
    --output "$RUN/logs/kmod-%a.out" "$REPO/ci/slurm/task.sh" "$RUN" kmod) || exit $?
  JOBS+=("$KMOD_JOB")
fi
SHARD_JOB=$(submit resmem-shards --array "0-$((SHARDS - 1))" --ntasks 1 --time "$TIME" \
  --output "$RUN/logs/shard-%a.out" "$REPO/ci/slurm/task.sh" "$RUN" shard) || exit $?
JOBS+=("$SHARD_JOB")
deps="afterany:$SHARD_JOB${HIL_JOB:+:$HIL_JOB}${KMOD_JOB:+:$KMOD_JOB}"
printf 'SHARD_JOB=%s\nHIL_JOB=%s\nKMOD_JOB=%s\n' "$SHARD_JOB" "$HIL_JOB" "$KMOD_JOB" > "$RUN/jobs.env"
GATHER_JOB=$(submit resmem-gather --dependency "$deps" --kill-on-invalid-dep=no --ntasks 1 \
  --time $((TIME < 10 ? TIME : 10)) \
  --output "$RUN/logs/gather.out" "$REPO/ci/slurm/gather.py" "$RUN") || exit $?
echo "GATHER_JOB=$GATHER_JOB" >> "$RUN/jobs.env"
echo "submit: run folder $RUN"
echo "submit: ${#FILES[@]} scenario files in $SHARDS shards: job array $SHARD_JOB (any node)"
[ -n "$HIL_JOB" ] && echo "submit: HIL steps $STEPS: job array $HIL_JOB (${CONSTRAINT:+--constraint $CONSTRAINT, }exclusive${GRES:+, --gres $GRES}${GPU_NODE:+, node $GPU_NODE})"
[ -n "$KMOD_JOB" ] && echo "submit: kmod+cuda scenarios: job $KMOD_JOB (--constraint $KMOD_CONSTRAINT, exclusive)"
echo "submit: gather job $GATHER_JOB (after every task ends): $RUN/report.md"
((WAIT)) || exit 0
# --wait: poll until the gather job has left the queue, then its verdict.
while [ -n "$(squeue -h -j "$GATHER_JOB" -o %i 2> /dev/null)" ]; do sleep 1; done
[ -f "$RUN/report.md" ] || { echo "submit: the gather job ended without a report: $RUN/logs/gather.out" >&2; cat "$RUN/logs/gather.out" >&2; exit 1; }
cat "$RUN/report.md"
python3 -c 'import json,sys; print({"PASS":0,"INCOMPLETE":3}.get(json.load(open(sys.argv[1]))["verdict"],1))' "$RUN/report.json" |
  { read -r rc; exit "$rc"; }
