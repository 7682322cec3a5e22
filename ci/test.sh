#!/usr/bin/env bash
# Set-up, the layer check (ci/layers.sh: upward dependencies fail the build), and the whole test
# suite: `bazel test //...` (unit tests, every scenario file, the FUSE
# tests, the QEMU kernel-module lane, the GPU tests that report "skipped: no GPU" where there is
# none), once plain and once under AddressSanitizer + UBSan; after each, a summary of test cases
# from that lane's JUnit XML, skipped ones by name with the reason; then a combined summary and a
# check that no FUSE mount was left behind.
set -uo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh || exit $?
# resmem's FUSE mounts in /proc/mounts: source resmem-fuse or type fuse.resmem (mock/fuse/
# fuse_daemon.h), as no_mount_left_test reads them; other FUSE mounts (fusectl, sshfs) are not
# ours. RESMEM_CI_MOUNTS names another file (ci/test_lanes_test.sh).
mounts=${RESMEM_CI_MOUNTS:-/proc/mounts}
resmem_fuse_mounts() { grep -E '^resmem-fuse | fuse\.resmem ' "$mounts"; }
# A FUSE mount of resmem's left by an earlier run that was killed would fail the no-mount checks:
# say so and remove it first.
resmem_fuse_mounts | while read -r _ dir _; do
  echo "ci/test.sh: removing a resmem FUSE mount an earlier run left at $dir" >&2
  umount -l "$dir" || true
done
# The lanes: `bazel test //...` under a configuration each, then each lane's summary from the
# JUnit XML of the tests it ran; then a combined line. The plain lane, and the asan lane
# (AddressSanitizer + UndefinedBehaviorSanitizer: .bazelrc, docs/reliability.md). The static QEMU
# guest parts (tag no_sanitizer), the three tests that run the whole scenario suite again (tag
# suite_sweep: every scenario file runs under the sanitizers once, in //scenarios) and the tests
# with no C++ in them are left out of the asan lane by name.
#
# How the lanes share the 2-core machine (issue 30, docs/build.md "Where CI's time goes"): a
# sanitizer lane has its own Bazel output base (a second server: the two configurations never
# evict each other's outputs) and runs at nice 19 beside the plain lane, in two parts:
#   1. beside the plain lane: its whole build, and every test not tagged exclusive. At nice 19 it
#      takes only the CPU the plain lane leaves idle: while the plain lane compiles, little; while
#      its exclusive tests run (the kernel lanes' QEMU guests, the Slurm cluster, the packages),
#      the rest. The plain lane's QEMU guests keep their speed (the card's rates are real time).
#   2. after the plain lane: its exclusive tests (FUSE mounts; no_mount_left_test looks at every
#      mount on the machine, so they must not meet the plain lane's), alone.
# RESMEM_CI_LANES="plain" runs the plain lane alone. Arguments go to every lane's `bazel test`.
lanes=${RESMEM_CI_LANES:-plain asan}
totals=$(mktemp)
logdir=$(mktemp -d)
# On exit: the run's temporary files, and autogroup scheduling as it was (set below;
# RESMEM_CI_AUTOGROUP names another file: ci/test_lanes_test.sh).
autogroup=${RESMEM_CI_AUTOGROUP:-/proc/sys/kernel/sched_autogroup_enabled}
autogroup_was=""
cleanup() {
  rm -rf "$totals" "$logdir" "${sanitizer_targets:-}"
  [[ -n $autogroup_was ]] && echo "$autogroup_was" > "$autogroup"
}
trap cleanup EXIT
ci_start=$(date +%s)
# The layer check first: upward dependencies between engine/, mock/, backends/ and kmod/ fail the
# build (ci/layers.sh, docs/architecture.md "Layers").
ci/layers.sh
layers_rc=$?
rc=0
[ "$layers_rc" -eq 0 ] || { echo "ci/test.sh: the layer check failed (ci/layers.sh above)" >&2; rc=1; }
plain_base=$(bazel info output_base 2>/dev/null)
# Bazel's trace profile of each lane's `bazel test`, kept beside the output base for a look at
# where the time went (ci/profile_summary.py prints a summary after each lane).
profile_dir="$plain_base/ci-profiles"
mkdir -p "$profile_dir"
# The tag filter of the sanitizer lanes: the same as .bazelrc's build:asan line (the tsan lane,
# ci/tsan.sh, gets it here too).
sanitizer_tags="-no_sanitizer,-suite_sweep"
# A sanitizer lane's server is given its tests by name, from the plain server's query: `//...`
# walked from a second output base would enter the work tree's bazel-* links (they point into the
# plain lane's output base, which only the plain server knows to skip) and fail on its packages.
# Tests with no C++ in them (shell and Python over files: the history page, the results tables,
# the boot-retry rules with a stand-in QEMU, ...) are the same in every lane: they run once, in
# the plain lane.
sanitizer_targets=$(mktemp)
bazel query "tests(//...) except attr(tags, '\bmanual\b|\bno_sanitizer\b|\bsuite_sweep\b', //...)
  intersect rdeps(tests(//...), kind('cc_(library|binary|test)', //...))" 2>/dev/null > "$sanitizer_targets"
# lane_bazel LANE ARGS...: bazel for that lane (its output base; no bazel-* links for a sanitizer
# lane, so the work tree's links stay the plain lane's and //... never walks into another base).
lane_bazel() {
  local lane=$1; shift
  if [[ $lane == plain ]]; then bazel "$@"; return; fi
  local cmd=$1; shift
  bazel --output_base="$plain_base-$lane" "$cmd" --config="$lane" --symlink_prefix=/ "$@"
}
# lane_test LANE LOG ARGS...: `bazel test` of the lane with ARGS, output to LOG (and the caller's
# stdout), the sandbox retry below; returns bazel's exit code.
lane_test() {
  local lane=$1 log=$2; shift 2
  lane_bazel "$lane" test "$@" > >(tee -a "$log") 2>&1
  local lane_rc=$?
  # Bazel's own sandbox can fail a test action that never ran to its end: "I/O exception during
  # sandboxed execution" (a file of the sandbox's gone, bazelbuild/bazel issue 22151: sporadic
  # under memory and CPU pressure on the 2-core CI machine). That is not a test's verdict: the
  # lane says so, with the machine's free disk and memory, and runs once more; Bazel keeps what
  # passed, so only what did not finish runs again. A test that failed (exit 3 with no such
  # error) is never run again.
  if (( lane_rc != 0 )) && grep -q "I/O exception during sandboxed execution" "$log"; then
    echo "lane $lane: Bazel's sandbox failed, not a test (exit $lane_rc):"
    grep "I/O exception during sandboxed execution" "$log" | cut -c1-400
    df -h "$plain_base" | tail -1
    free -m | sed -n 2p
    echo "lane $lane: running bazel test once more"
    lane_bazel "$lane" test "$@" 2>&1 | tee -a "$log"
    lane_rc=${PIPESTATUS[0]}
  fi
  return "$lane_rc"
}
# lane_summary LANE: the lane's test cases from its JUnit XML, skipped ones by name with the
# reason, and any sanitizer report in its logs; returns 3 on a sanitizer report.
lane_summary() {
  local lane=$1
  local tests_file; tests_file=$(mktemp)
  if [[ $lane == plain ]]; then bazel query "tests(//...)" 2>/dev/null > "$tests_file"
  else cp "$sanitizer_targets" "$tests_file"; fi
  local testlogs; testlogs=$(lane_bazel "$lane" info bazel-testlogs 2>/dev/null)
  python3 - "$lane" "$testlogs" "$totals" "$tests_file" <<'PY'
import glob, re, sys, xml.etree.ElementTree as ET
lane, testlogs, totals, tests_file = sys.argv[1:5]
passed = failed = skipped = 0
skips = []
unreadable = []
# "//a/b:c" -> "a/b/c", the test's folder under bazel-testlogs; a sharded test's results are in
# its folder's shard_N_of_M/ (shard_count in BUILD).
lane_targets = {l.strip().lstrip("/").replace(":", "/") for l in open(tests_file) if l.strip()}
shard = re.compile(r"/shard_\d+_of_\d+$")
def target_of(path, name):
    return shard.sub("", path[len(testlogs) + 1:-len("/" + name)])
for path in sorted(glob.glob(f"{testlogs}/**/test.xml", recursive=True)):
    target = target_of(path, "test.xml")
    if target not in lane_targets:
        continue
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        unreadable.append(f"  //{target}: {e}")
        continue
    for tc in root.iter("testcase"):
        name = f"//{target}: {tc.get('classname', '')}.{tc.get('name', '')}".replace(": .", ": ")
        if tc.find("failure") is not None or tc.find("error") is not None:
            failed += 1
        elif tc.find("skipped") is not None or tc.get("result") == "skipped":
            skipped += 1
            s = tc.find("skipped")
            msg = (s.get("message") if s is not None else "") or (s.text if s is not None else "") or ""
            # GoogleTest puts "file:line" before the reason: keep the reason.
            lines = [l.strip() for l in msg.splitlines() if l.strip() and not re.match(r"^\S+:\d+$", l.strip())]
            skips.append(f"  skipped: {name}: {' '.join(lines) if lines else 'no reason given'}")
        else:
            passed += 1
if skips:
    print(f"lane {lane}: test cases skipped here, with the reason:")
    print("\n".join(skips))
if unreadable:
    # Its cases are not in the counts below: Bazel's verdict lines at the end say how it ended.
    print(f"lane {lane}: JUnit files that do not parse, their cases not counted:")
    print("\n".join(unreadable))
print(f"lane {lane}: {passed} passed, {failed} failed, {skipped} skipped")
with open(totals, "a") as f:
    f.write(f"{passed} {failed} {skipped}\n")
# A sanitizer report in any of the lane's test logs fails the lane, whether or not its test
# failed: a report from a process whose exit status no test checks (the FUSE daemon that
# FuseDevice forks, halted by halt_on_error with exit 66) would otherwise pass unseen.
report = re.compile(r"(WARNING|ERROR): (ThreadSanitizer|AddressSanitizer|LeakSanitizer)|: runtime error: ")
found = []
for log in sorted(glob.glob(f"{testlogs}/**/test.log", recursive=True)):
    target = target_of(log, "test.log")
    if target not in lane_targets:
        continue
    with open(log, errors="replace") as f:
        hits = [l.rstrip() for l in f if report.search(l)]
    if hits:
        found.append(f"  //{target}: {len(hits)} report line(s), first: {hits[0]}")
if found:
    print(f"lane {lane}: sanitizer reports in test logs (the lane fails):")
    print("\n".join(found))
    sys.exit(3)
PY
  local py_rc=$?
  rm -f "$tests_file"
  return "$py_rc"
}
# lane_verdicts LABEL LOG: Bazel's own verdict lines in LOG other than PASSED (FAILED, FAILED TO
# BUILD, TIMEOUT, FLAKY, NO STATUS, INCOMPLETE), under LABEL. The summaries above count test cases
# from the JUnit XML, which Bazel keeps from a target's latest run only: a test that timed out in a
# sanitizer lane's part 1 and passed when part 2 ran it again (a failed test is never cached) fails
# the run with no failing case in any XML, and is named only here.
lane_verdicts() {
  local lines
  lines=$(grep -E '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE)' "$2" 2>/dev/null | sed -E 's/ +/ /g')
  [[ -z $lines ]] || { echo "ci/test.sh: $1: Bazel's verdicts other than PASSED:"; sed 's/^/  /' <<< "$lines"; }
}
sanitizer_lanes=()
for lane in $lanes; do [[ $lane != plain ]] && sanitizer_lanes+=("$lane"); done
# Nice 19 only holds where the kernel compares nice values across sessions: with autogroup
# scheduling on (Debian's default, /proc/sys/kernel/sched_autogroup_enabled = 1) every session is
# a group of its own with an equal share, and Bazel's process-wrapper starts each action in a
# session of its own, so the sanitizer lane's compiles took half the CPU from the plain lane's
# QEMU guests and tests (the fresh clone's run of 1369cda). Off for the run, put back after.
if (( ${#sanitizer_lanes[@]} )) && [[ " $lanes " == *" plain "* && -w $autogroup ]]; then
  autogroup_was=$(cat "$autogroup")
  echo 0 > "$autogroup"
  echo "ci/test.sh: autogroup scheduling off for the run (was $autogroup_was), so nice 19 holds"
elif (( ${#sanitizer_lanes[@]} )) && [[ " $lanes " == *" plain "* ]]; then
  echo "ci/test.sh: cannot turn autogroup scheduling off ($autogroup not writable): the sanitizer lane shares the CPU evenly with the plain lane"
fi
for lane in "${sanitizer_lanes[@]}"; do
  echo "=== ci/test.sh: lane $lane, part 1 (beside the plain lane, nice 19): bazel test --config=$lane of the lane's $(wc -l < "$sanitizer_targets") tests but the exclusive ones; its output follows the plain lane's"
  echo "left out of lane $lane (tags no_sanitizer, suite_sweep, .bazelrc; or no C++ in them):" \
    $(bazel query "tests(//...) except attr(tags, '\bmanual\b', //...)" 2>/dev/null | grep -vxF -f "$sanitizer_targets")
  # A server of this base left from an earlier run would keep its own niceness: stop it first.
  bazel --output_base="$plain_base-$lane" shutdown 2>/dev/null
  ( start=$(date +%s)
    nice -n 19 bash -c "$(declare -f lane_bazel lane_test); plain_base='$plain_base'; \
      lane_test $lane '$logdir/$lane.1.log' --profile='$profile_dir/$lane.1.profile.gz' \
        --test_tag_filters=$sanitizer_tags,-exclusive --nobuild_tests_only \
        --target_pattern_file='$sanitizer_targets' $( (($#)) && printf '%q ' "$@")" \
      > /dev/null 2>&1
    echo $? > "$logdir/$lane.1.rc"
    echo $(( $(date +%s) - start )) > "$logdir/$lane.1.s" ) &
done
if [[ " $lanes " == *" plain "* ]]; then
  echo "=== ci/test.sh: lane plain: bazel test //..."
  start=$(date +%s)
  lane_test plain "$logdir/plain.log" --profile="$profile_dir/plain.profile.gz" //... "$@"
  lane_rc=$?
  echo "lane plain: bazel test //... finished in $(( $(date +%s) - start )) s with exit code $lane_rc"
  (( lane_rc != 0 )) && rc=$lane_rc
  lane_summary plain
  [ $? -eq 3 ] && rc=1
  python3 ci/profile_summary.py plain "$profile_dir/plain.profile.gz"
fi
wait
for lane in "${sanitizer_lanes[@]}"; do
  echo "=== ci/test.sh: lane $lane, part 1 (beside the plain lane), its output:"
  cat "$logdir/$lane.1.log"
  part1_rc=$(cat "$logdir/$lane.1.rc")
  echo "lane $lane: part 1 finished in $(cat "$logdir/$lane.1.s") s with exit code $part1_rc"
  echo "=== ci/test.sh: lane $lane, part 2 (alone): bazel test --config=$lane, the lane's exclusive tests"
  start=$(date +%s)
  lane_test "$lane" "$logdir/$lane.2.log" --profile="$profile_dir/$lane.2.profile.gz" \
    --target_pattern_file="$sanitizer_targets" "$@"
  lane_rc=$?
  echo "lane $lane: part 2 finished in $(( $(date +%s) - start )) s with exit code $lane_rc"
  (( part1_rc != 0 )) && rc=$part1_rc
  (( lane_rc != 0 )) && rc=$lane_rc
  lane_summary "$lane"
  [ $? -eq 3 ] && rc=1
  python3 ci/profile_summary.py "$lane, part 1" "$profile_dir/$lane.1.profile.gz"
  python3 ci/profile_summary.py "$lane, part 2" "$profile_dir/$lane.2.profile.gz"
done
echo "ci/test.sh: the lanes took $(( $(date +%s) - ci_start )) s in all"
echo "lanes run: $lanes"
lane_verdicts "lane plain" "$logdir/plain.log"
for lane in "${sanitizer_lanes[@]}"; do
  lane_verdicts "lane $lane, part 1" "$logdir/$lane.1.log"
  lane_verdicts "lane $lane, part 2" "$logdir/$lane.2.log"
done
awk '{p += $1; f += $2; s += $3} END {printf "total: %d passed, %d failed, %d skipped\n", p, f, s}' "$totals"
if resmem_fuse_mounts > /dev/null; then
  echo "ci/test.sh: a resmem FUSE mount was left behind (remove with umount -l DIR):" >&2
  resmem_fuse_mounts >&2
  rc=1
fi
exit $rc
