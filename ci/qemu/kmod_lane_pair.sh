#!/bin/bash
# Every kernel line's lane of one part at once (Bazel: //ci/qemu:kmod_lane_driver and
# //ci/qemu:kmod_lane_engine; docs/build.md "Incremental"):
#   kmod_lane_pair.sh --part driver|engine [--kernel-lines 6.1,6.12,7.3]
# runs ci/qemu/kmod_lane.sh --kernel-line LINE --part PART for every line, side by side as far as
# the cores go, each with its own TEST_TMPDIR, JUnit file and outputs folder (LANE_NAME/ under the
# test's outputs), then prints each lane's log whole, in the order of the lines, and writes one
# JUnit file holding every lane's suite (ci/qemu/junit_merge.py; a lane that wrote none is one
# failed case named after it).
# Each lane's guest is one TCG process on one core: side by side on an otherwise idle machine of
# two cores, two kernels' engine parts passed in 95 s against 82 + 77 s one after the other, the
# driver parts in 194 s against 155 + 161 s (2026-11-29), with the card's real-time cases'
# figures unchanged. The target stays exclusive: the guests fill the machine.
# With fewer cores than lanes (nproc; RESMEM_PAIR_CPUS overrides it) the lanes run in batches of
# one per core, a batch starting when the one before has ended, and the log says so: two guests
# on one core would halve the card's reader. On two cores the matrix's three lines run as 6.1 and
# 6.12 side by side, then 7.3.
# Exit 0 only when every lane exited 0.
set -euo pipefail

log() { echo "kmod-lane-pair: $*" >&2; }
die() { echo "kmod-lane-pair: ERROR: $*" >&2; exit 1; }

PART=
LINES=6.1,6.12,7.3
while (($#)); do
	case "$1" in
	--part) PART=${2:?--part needs driver or engine}; shift 2 ;;
	--kernel-lines) LINES=${2:?--kernel-lines needs a comma-separated list: 6.1,6.12,7.3}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1': use --part driver|engine [--kernel-lines 6.1,6.12,7.3] (--help)" ;;
	esac
done
[[ $PART == driver || $PART == engine ]] || die "--part '$PART': use driver or engine (kmod_lane.sh --part all runs one kernel's every case)"
IFS=, read -ra KLINES <<<"$LINES"
((${#KLINES[@]})) || die "--kernel-lines is empty: give 6.1,6.12,7.3"

HERE=$(cd "$(dirname "$0")" && pwd)
LANE="$HERE/kmod_lane.sh"
MERGE="$HERE/junit_merge.py"
[[ -r $LANE && -r $MERGE ]] || die "kmod_lane.sh or junit_merge.py not found beside $0"
BASE="${TEST_TMPDIR:-$(mktemp -d)}/kmod-lane-pair"
rm -rf "$BASE" && mkdir -p "$BASE"

NAMES=() PIDS=() RCS=()
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
((CPUS >= 1)) || CPUS=1
# Lanes run side by side in batches of one per core: with fewer cores than lanes, each batch ends
# before the next starts, and the log says so (two guests on one core would halve the card's
# reader).
if ((CPUS < ${#KLINES[@]})); then
	if ((CPUS == 1)); then
		log "1 core(s) for ${#KLINES[@]} lanes: one after the other (each lane's guest wants a core of its own)"
	else
		log "$CPUS core(s) for ${#KLINES[@]} lanes: $CPUS side by side at a time, the next when they end (each lane's guest wants a core of its own)"
	fi
fi

# start_lane LINE SYNC COUNT: one lane in the background, its pid appended to PIDS.
start_lane() {
	local line=$1 sync=$2 count=$3 name out=
	name="kmod_lane_${line//./_}_$PART"
	NAMES+=("$name")
	mkdir -p "$BASE/$name/tmp"
	if [[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]]; then
		out="$TEST_UNDECLARED_OUTPUTS_DIR/$name" && mkdir -p "$out"
	fi
	# setsid: each lane in its own process group, so a timeout stops its QEMU and card too.
	TEST_TMPDIR="$BASE/$name/tmp" XML_OUTPUT_FILE="$BASE/$name/test.xml" TEST_UNDECLARED_OUTPUTS_DIR="$out" \
		RESMEM_LANE_SYNC="$sync" RESMEM_LANE_COUNT=$count \
		setsid bash "$LANE" --kernel-line "$line" --part "$PART" >"$BASE/$name/log" 2>&1 &
	PIDS+=($!)
	log "started $name (pid $!)"
}

T0=$(date +%s)
for ((b = 0; b < ${#KLINES[@]}; b += CPUS)); do
	BATCH=("${KLINES[@]:b:CPUS}")
	# Side by side, each lane starts its later boots (IOMMU, signing) beside its first only when
	# every lane of its batch has reached its GPUDirect scenarios or ended (kmod_lane.sh, step 5b):
	# the card's real-time cases of one lane never meet another lane's extra guests.
	SYNC=
	if ((${#BATCH[@]} > 1)); then
		SYNC="$BASE/first-boots-$b" && rm -rf "$SYNC" && mkdir -p "$SYNC"
	fi
	first=${#PIDS[@]}
	for line in "${BATCH[@]}"; do start_lane "$line" "$SYNC" "${#BATCH[@]}"; done
	for ((i = first; i < ${#PIDS[@]}; i++)); do wait_lane "$i"; done
done

rc=0
declare -a MERGE_ARGS
for i in "${!PIDS[@]}"; do
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
