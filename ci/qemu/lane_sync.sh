# The kernel lane's rule for starting its later boots beside its first (kmod_lane.sh sources this
# file; lane_sync_test.sh runs it against stand-in boots). A lane's first boot marks when its guest
# reaches a point of the console (the engine part: its GPUDirect scenarios); beside the other lanes
# of a pair (kmod_lane_pair.sh sets RESMEM_LANE_SYNC to a shared folder and RESMEM_LANE_COUNT to the
# number of lanes) the later boots start only once every lane has marked, so that no lane's earlier
# cases (the card's, which time the guest in real time) meet them. Needs LANE_NAME.

# lane_reached: this lane's first boot reached the point, or ended; marked for the pair. Again is
# harmless.
lane_reached() {
	[[ -n ${RESMEM_LANE_SYNC:-} && -d $RESMEM_LANE_SYNC ]] && : >"$RESMEM_LANE_SYNC/$LANE_NAME"
	return 0
}

# lanes_ready: every lane of the pair has marked (true for a lane alone, or without the folder).
lanes_ready() {
	[[ -z ${RESMEM_LANE_SYNC:-} || ! -d $RESMEM_LANE_SYNC ]] && return 0
	local n
	n=$(find "$RESMEM_LANE_SYNC" -maxdepth 1 -type f | wc -l)
	((n >= ${RESMEM_LANE_COUNT:-1}))
}

# beside_first_boot PID CONSOLE PATTERN START: while the first boot (PID) runs, marks this lane once
# CONSOLE has a line matching PATTERN (grep's), and once every lane has marked runs the command
# START (once) and returns 0. Returns 1 when the boot ended first: START has not run (the caller
# marks the lane and starts the boots after it). Looks every RESMEM_LANE_POLL seconds (0.5).
beside_first_boot() {
	local pid=$1 console=$2 pattern=$3 start=$4 reached=
	while kill -0 "$pid" 2>/dev/null; do
		if [[ -z $reached ]] && grep -q -- "$pattern" "$console" 2>/dev/null; then
			reached=1
			lane_reached
		fi
		if [[ -n $reached ]] && lanes_ready; then
			$start
			return 0
		fi
		sleep "${RESMEM_LANE_POLL:-0.5}"
	done
	return 1
}
