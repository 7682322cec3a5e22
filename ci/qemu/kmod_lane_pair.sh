#!/bin/bash
# Both kernel lines' lanes of one part at once (Bazel: //ci/qemu:kmod_lane_driver and
# //ci/qemu:kmod_lane_engine; docs/build.md "Incremental"):
#   kmod_lane_pair.sh --part driver|engine [--kernel-lines 6.1,6.12]
# runs ci/qemu/kmod_lane.sh --kernel-line LINE --part PART for every line side by side, each with
# its own TEST_TMPDIR, JUnit file and outputs folder (LANE_NAME/ under the test's outputs), then
# prints each lane's log whole, in the order of the lines, and writes one JUnit file holding every
# lane's suite (ci/qemu/junit_merge.py; a lane that wrote none is one failed case named after it).
# Each lane's guest is one TCG process on one core of the two: side by side on an otherwise idle
# machine, both kernels' engine parts passed in 95 s against 82 + 77 s one after the other, the
# driver parts in 194 s against 155 + 161 s (2026-11-29), with the card's real-time cases'
# figures unchanged. The target stays exclusive: the two guests fill the machine.
# With fewer cores than lanes (nproc; RESMEM_PAIR_CPUS overrides it) the lanes run one after the
# other instead, and the log says so: two guests on one core would halve the card's reader.
# Exit 0 only when every lane exited 0.
set -euo pipefail

log() { echo "kmod-lane-pair: $*" >&2; }
die() { echo "kmod-lane-pair: ERROR: $*" >&2; exit 1; }

PART=
LINES=6.1,6.12
while (($#)); do
	case "$1" in
	--part) PART=${2:?--part needs driver or engine}; shift 2 ;;
	--kernel-lines) LINES=${2:?--kernel-lines needs a comma-separated list: 6.1,6.12}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1': use --part driver|engine [--kernel-lines 6.1,6.12] (--help)" ;;
	esac
done
[[ $PART == driver || $PART == engine ]] || die "--part '$PART': use driver or engine (kmod_lane.sh --part all runs one kernel's every case)"
IFS=, read -ra KLINES <<<"$LINES"
((${#KLINES[@]})) || die "--kernel-lines is empty: give 6.1,6.12"

HERE=$(cd "$(dirname "$0")" && pwd)
LANE="$HERE/kmod_lane.sh"
MERGE="$HERE/junit_merge.py"
[[ -r $LANE && -r $MERGE ]] || die "kmod_lane.sh or junit_merge.py not found beside $0"
BASE="${TEST_TMPDIR:-$(mktemp -d)}/kmod-lane-pair"
rm -rf "$BASE" && mkdir -p "$BASE"

declare -a NAMES PIDS RCS
# stop_lanes: on the test's timeout (SIGTERM), stop every lane and print what each logged so far.
stop_lanes() {
	local pid
	for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
	print_logs "stopped"
	exit 143
}
print_logs() {
	local name
	for name in "${NAMES[@]}"; do
		echo "==== $name ($1) ===="
		cat "$BASE/$name/log" 2>/dev/null || true
	done
}
# wait_lane I: waits for lane I and keeps its exit status in RCS[I].
wait_lane() {
	set +e
	wait "${PIDS[$1]}"
	RCS[$1]=$?
	set -e
}
trap stop_lanes TERM INT

CPUS=${RESMEM_PAIR_CPUS:-$(nproc)}
SIDE_BY_SIDE=1
if ((CPUS < ${#KLINES[@]})); then
	SIDE_BY_SIDE=0
	log "$CPUS core(s) for ${#KLINES[@]} lanes: one after the other (each lane's guest wants a core of its own)"
fi

# Side by side, each lane starts its later boots (IOMMU, signing) beside its first only when every
# lane's first boot has reached its GPUDirect scenarios or ended (kmod_lane.sh, step 5b): the card's
# real-time cases of one lane never meet the other lane's extra guests.
SYNC=
if ((SIDE_BY_SIDE)); then
	SYNC="$BASE/first-boots" && rm -rf "$SYNC" && mkdir -p "$SYNC"
fi
T0=$(date +%s)
for line in "${KLINES[@]}"; do
	name="kmod_lane_${line//./_}_$PART"
	NAMES+=("$name")
	mkdir -p "$BASE/$name/tmp"
	out=
	if [[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]]; then
		out="$TEST_UNDECLARED_OUTPUTS_DIR/$name" && mkdir -p "$out"
	fi
	# setsid: each lane in its own process group, so a timeout stops its QEMU and card too.
	TEST_TMPDIR="$BASE/$name/tmp" XML_OUTPUT_FILE="$BASE/$name/test.xml" TEST_UNDECLARED_OUTPUTS_DIR="$out" \
		RESMEM_LANE_SYNC="$SYNC" RESMEM_LANE_COUNT=${#KLINES[@]} \
		setsid bash "$LANE" --kernel-line "$line" --part "$PART" >"$BASE/$name/log" 2>&1 &
	PIDS+=($!)
	log "started $name (pid $!)"
	# One after the other: this lane ends before the next starts.
	((SIDE_BY_SIDE)) || wait_lane $((${#PIDS[@]} - 1))
done

rc=0
declare -a MERGE_ARGS
for i in "${!PIDS[@]}"; do
	[[ -n "${RCS[i]:-}" ]] || wait_lane "$i"
	((RCS[i] == 0)) || rc=1
	log "${NAMES[$i]} exit ${RCS[$i]} after $(($(date +%s) - T0)) s"
	MERGE_ARGS+=("${NAMES[$i]}=${RCS[$i]}=$BASE/${NAMES[$i]}/test.xml")
done
trap - TERM INT
print_logs "exit"
for i in "${!NAMES[@]}"; do log "${NAMES[$i]}: exit ${RCS[$i]}"; done
python3 "$MERGE" "${XML_OUTPUT_FILE:-$BASE/test.xml}" "${MERGE_ARGS[@]}" || rc=1
log "every lane done in $(($(date +%s) - T0)) s"
exit "$rc"
