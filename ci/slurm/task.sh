#!/usr/bin/env bash
# One task of a job array submitted by ci/slurm/submit.sh; Slurm runs it (sbatch copies it to the
# node's spool, so everything it needs comes from RUN/run.env, not from where this file lies).
#   task.sh RUN shard   run scenario shard $SLURM_ARRAY_TASK_ID: `resmem run` over the files in
#                       RUN/shards/N.list, JSON to RUN/results/shard-N.json
#   task.sh RUN hil     run HIL step number $SLURM_ARRAY_TASK_ID of RUN/run.env's HIL_STEPS
#                       through ci/hil-nightly.sh --steps STEP (report in RUN/hil/STEP/DAY/)
#   task.sh RUN kmod    `resmem run --backend kmod+cuda scenarios/kmod`, JSON to
#                       RUN/results/hil-kmod.json
# Before it works it writes RUN/state/NAME.start (node, job, time); when its command ends, whatever
# the exit code, RUN/state/NAME.done (exit code, time). A task killed by Slurm (scancel, time
# limit, node failure) or by a signal leaves a .start with no .done: ci/slurm/gather.py reports it
# as killed or lost with Slurm's reason, never as missing.
set -u
RUN=$1
KIND=$2
[ -f "$RUN/run.env" ] || { echo "task.sh: no $RUN/run.env (submit with ci/slurm/submit.sh)" >&2; exit 2; }
# shellcheck disable=SC1091
. "$RUN/run.env"
I=${SLURM_ARRAY_TASK_ID:?task.sh runs as a Slurm array task (SLURM_ARRAY_TASK_ID unset)}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
case "$KIND" in
  shard) NAME=$(printf 'shard-%02d' "$I") ;;
  hil)   IFS=, read -r -a steps <<< "$HIL_STEPS"
         STEP=${steps[$I]:?no HIL step number $I in HIL_STEPS=$HIL_STEPS}
         NAME="hil-$STEP" ;;
  kmod)  NAME=hil-kmod ;;
  *) echo "task.sh: unknown kind '$KIND' (shard, hil or kmod)" >&2; exit 2 ;;
esac
# gpus: the devices Slurm gave the job (set when it asked for --gres gpu).
printf 'node=%s\nhost=%s\njob=%s\narray_task=%s_%s\ngpus=%s\nstart=%s\n' "$NODE" "$(hostname -s)" \
  "${SLURM_JOB_ID:-}" "${SLURM_ARRAY_JOB_ID:-}" "$I" "${CUDA_VISIBLE_DEVICES:-}" "$(date -u +%FT%TZ)" \
  > "$RUN/state/$NAME.start"
echo "task $NAME on node $NODE (job ${SLURM_ARRAY_JOB_ID:-}_$I)"
cd "$REPO" || exit 2
case "$KIND" in
  shard)
    mapfile -t files < "$RUN/shards/$I.list"
    "$RESMEM" run --backend "$SHARD_BACKEND" --json "$RUN/results/$NAME.json" "${files[@]}" \
      > "$RUN/results/$NAME.log" 2>&1
    rc=$?
    tail -n 1 "$RUN/results/$NAME.log" ;;
  hil)
    quick=(); [ "$QUICK" = 1 ] && quick=(--quick)
    ci/hil-nightly.sh --bin "$BIN" --out "$RUN/hil/$STEP" --thresholds "$THRESHOLDS" \
      --steps "$STEP" "${quick[@]}" > "$RUN/hil/$STEP.log" 2>&1
    rc=$?
    tail -n 3 "$RUN/hil/$STEP.log" ;;
  kmod)
    "$RESMEM" run --backend kmod+cuda --json "$RUN/results/$NAME.json" scenarios/kmod \
      > "$RUN/results/$NAME.log" 2>&1
    rc=$?
    tail -n 1 "$RUN/results/$NAME.log" ;;
esac
printf 'rc=%s\nend=%s\n' "$rc" "$(date -u +%FT%TZ)" > "$RUN/state/$NAME.done"
echo "task $NAME: exit $rc"
exit "$rc"
