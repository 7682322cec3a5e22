#!/usr/bin/env bash
# Is the debug kernel lane's last recorded run (ci/qemu/debug_lane_last.txt) a run of the module
# sources in this tree? The lane takes an hour or more of TCG under KASAN and needs the debug
# kernel built and cached (docs/reliability.md "Debug kernel"), so it is not part of
# `bazel test //...`; it runs when asked and when kmod/ changes. This test is the reminder: it
# passes, naming the run, while the sha256 of //kmod:module_sources equals the recorded one, and
# otherwise reports itself skipped with the way out (visible in ci/test.sh's list of skipped
# cases), never failed: a fresh CI machine cannot run the lane.
# Usage: debug_lane_current_test.sh RECORD SOURCE...
set -uo pipefail
RECORD=$1; shift
XML=${XML_OUTPUT_FILE:-/dev/null}
# The sources' sha256: each file's path under kmod/ and content, in path order (the paths share
# their part up to kmod/, so sorting them sorts the paths under it).
sha=$(printf '%s\n' "$@" | sort | while read -r f; do printf '%s\0' "${f#*kmod/}"; cat "$f"; done |
	sha256sum | cut -d' ' -f1)
recorded=$(sed -n 's/^module_sources_sha256 //p' "$RECORD")
when=$(sed -n 's/^date //p' "$RECORD")
what=$(sed -n 's/^ran //p' "$RECORD")
# write_xml pass|skip MESSAGE: the one case's JUnit XML (ci/qemu/junit_case.py, beside this script).
write_xml() {
	python3 "$(dirname "$0")/junit_case.py" "$XML" debug_lane_current debug_lane_ran_these_module_sources \
		kmod_lane_debug "$1" "$2"
}
if [[ -z $recorded || -z $when ]]; then
	echo "debug_lane_current: $RECORD has no 'date' or 'module_sources_sha256' line"
	exit 1
fi
if [[ $sha == "$recorded" ]]; then
	msg="the module sources are those the debug kernel lane last ran on $when ($what)"
	echo "debug_lane_current: ok: $msg"
	write_xml pass "$msg"
else
	msg="kmod/'s module sources changed since the debug kernel lane's last recorded run ($when): run ci/qemu/kmod_lane_debug.sh and ci/qemu/kmod_lane_debug.sh --kernel-line 7.3 (about an hour each on 2 cores; the kernels cached by ci/qemu/build_debug_kernel.sh [--kernel-line 7.3]), then write its date, what ran and module_sources_sha256 $sha into $RECORD and its figures into docs/reliability.md"
	echo "debug_lane_current: SKIPPED: $msg"
	write_xml skip "$msg"
fi
exit 0
