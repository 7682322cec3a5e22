#!/usr/bin/env bash
# ci/qemu/kmod_lane_debug.sh and build_debug_kernel.sh without a debug kernel: each kernel line's
# skip names its own lane and the command that builds its kernel (a parsable JUnit file), a line
# with no debug kernel or an unknown argument is refused with exit 2, and kmod_lane.sh refuses
# RESMEM_KERNEL_BUILDER for Debian's own kernel lines. Needs no QEMU, no network, no cache.
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh
export RESMEM_DEBUG_KERNEL_CACHE="$T/no-debug-cache" RESMEM_KMOD_CACHE="$T/no-kmod-cache"

skip_reason() {  # skip_reason XML: the skipped case's name and message, or the parse error
  python3 -c 'import sys, xml.etree.ElementTree as ET
c = ET.parse(sys.argv[1]).getroot().find("testsuite/testcase")
print(c.get("name"), "|", c.find("skipped").get("message"))' "$1" 2>&1
}
for line in 6.1 7.3; do
  name=kmod_lane_debug; [ $line = 7.3 ] && name=kmod_lane_debug_7_3
  args=(); [ $line = 7.3 ] && args=(--kernel-line 7.3)
  XML_OUTPUT_FILE="$T/$line.xml" ci/qemu/kmod_lane_debug.sh "${args[@]}" > "$T/$line.out" 2>&1
  rc=$?
  got=$(skip_reason "$T/$line.xml")
  [ $rc = 0 ] && [[ $got == "$name | "*"build_debug_kernel.sh --kernel-line $line"* ]] &&
    ok "no $line debug kernel: $name skipped, naming build_debug_kernel.sh --kernel-line $line" ||
    bad "no $line debug kernel: exit $rc, case '$got'"
  ci/qemu/build_debug_kernel.sh --kernel-line $line --print-dir > "$T/pd.out" 2> "$T/pd.err"
  rc=$?
  [ $rc = 1 ] && [ ! -s "$T/pd.out" ] && ok "build_debug_kernel.sh --kernel-line $line --print-dir: exit 1, no entry printed" ||
    bad "--print-dir $line: exit $rc, '$(cat "$T/pd.out" "$T/pd.err")'"
done
ci/qemu/kmod_lane_debug.sh --kernel-line 6.12 > "$T/bad.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "made for the lane's 6.1 and 7.3" "$T/bad.out" &&
  ok "a kernel line without a debug kernel is refused (exit 2), naming the lines there are" ||
  bad "--kernel-line 6.12: exit $rc, '$(cat "$T/bad.out")'"
ci/qemu/kmod_lane_debug.sh --kernel 7.3 > "$T/arg.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "unknown argument '--kernel'" "$T/arg.out" && ok "an unknown argument is refused (exit 2)" ||
  bad "--kernel: exit $rc, '$(cat "$T/arg.out")'"
ci/qemu/build_debug_kernel.sh --kernel-line 6.12 --print-dir > "$T/bk.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "made for the lane's 6.1 and 7.3" "$T/bk.out" && ok "build_debug_kernel.sh refuses another line, naming the two" ||
  bad "build_debug_kernel.sh --kernel-line 6.12: exit $rc, '$(cat "$T/bk.out")'"
RESMEM_KERNEL_BUILDER=trixie ci/qemu/kmod_lane.sh --kernel-line 6.1 > "$T/kb.out" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "RESMEM_KERNEL_BUILDER=trixie is for a kernel of your own" "$T/kb.out" &&
  ok "kmod_lane.sh: RESMEM_KERNEL_BUILDER with a Debian kernel line is refused, saying what it is for" ||
  bad "RESMEM_KERNEL_BUILDER with --kernel-line 6.1: exit $rc, '$(cat "$T/kb.out")'"
finish "kmod_lane_debug_args_test"
