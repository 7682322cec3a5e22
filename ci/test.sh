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
# A FUSE mount of resmem's left by an earlier run that was killed would fail the no-mount checks:
# say so and remove it first.
grep -E "fuse\.resmem" /proc/mounts | while read -r _ dir _; do
  echo "ci/test.sh: removing a resmem FUSE mount an earlier run left at $dir" >&2
  umount -l "$dir" || true
done
# Each lane: `bazel test` under a configuration, then its summary from the JUnit XML of the tests
# that lane runs (all lanes share bazel-testlogs: a test left out of a lane keeps the log of an
# earlier lane there, which must not count). The plain lane, then the asan lane
# (AddressSanitizer + UndefinedBehaviorSanitizer: .bazelrc, docs/reliability.md; the static QEMU
# guest parts, tagged no_sanitizer, are left out of it by name), then a combined line.
# RESMEM_CI_LANES="plain" runs the plain lane alone. Arguments go to every lane's `bazel test`.
lanes=${RESMEM_CI_LANES:-plain asan}
totals=$(mktemp)
trap 'rm -f "$totals"' EXIT
# The layer check first: upward dependencies between engine/, mock/, backends/ and kmod/ fail the
# build (ci/layers.sh, docs/architecture.md "Layers").
ci/layers.sh
layers_rc=$?
rc=0
[ "$layers_rc" -eq 0 ] || { echo "ci/test.sh: the layer check failed (ci/layers.sh above)" >&2; rc=1; }
for lane in $lanes; do
  config=(); [[ $lane != plain ]] && config=(--config="$lane")
  echo "=== ci/test.sh: lane $lane: bazel test ${config[*]} //..."
  lane_tests="tests(//...)"
  if [[ $lane != plain ]]; then
    echo "left out of this lane (tag no_sanitizer, .bazelrc):" \
      $(bazel query 'attr(tags, "\bno_sanitizer\b", //...)' 2>/dev/null)
    lane_tests="$lane_tests except attr(tags, '\bno_sanitizer\b', //...)"
  fi
  tests_file=$(mktemp)
  bazel query "$lane_tests" 2>/dev/null > "$tests_file"
  start=$(date +%s)
  bazel_log=$(mktemp)
  bazel test "${config[@]}" //... "$@" 2>&1 | tee "$bazel_log"
  lane_rc=${PIPESTATUS[0]}
  # Bazel's own sandbox can fail a test action that never ran to its end: "I/O exception during
  # sandboxed execution" (a file of the sandbox's gone, bazelbuild/bazel issue 22151: sporadic
  # under memory and CPU pressure, as on the 2-core CI machine in the asan lane). That is not a
  # test's verdict: the lane says so, with the machine's free disk and memory, and runs once
  # more; Bazel keeps what passed, so only what did not finish runs again. A test that failed
  # (exit 3 with no such error) is never run again.
  if (( lane_rc != 0 )) && grep -q "I/O exception during sandboxed execution" "$bazel_log"; then
    echo "lane $lane: Bazel's sandbox failed, not a test (exit $lane_rc):"
    grep "I/O exception during sandboxed execution" "$bazel_log" | cut -c1-400
    df -h "$(bazel info output_base 2>/dev/null || echo /)" | tail -1
    free -m | sed -n 2p
    echo "lane $lane: running bazel test ${config[*]} //... once more"
    bazel test "${config[@]}" //... "$@"
    lane_rc=$?
  fi
  rm -f "$bazel_log"
  echo "lane $lane: bazel test ${config[*]} //... finished in $(( $(date +%s) - start )) s with exit code $lane_rc"
  (( lane_rc != 0 )) && rc=$lane_rc
  testlogs=$(bazel info "${config[@]}" bazel-testlogs 2>/dev/null)
  python3 - "$lane" "$testlogs" "$totals" "$tests_file" <<'PY'
import glob, os, re, sys, xml.etree.ElementTree as ET
lane, testlogs, totals, tests_file = sys.argv[1:5]
passed = failed = skipped = 0
skips = []
# "//a/b:c" -> "a/b/c", the test's folder under bazel-testlogs.
lane_targets = {l.strip().lstrip("/").replace(":", "/") for l in open(tests_file) if l.strip()}
for path in sorted(glob.glob(f"{testlogs}/**/test.xml", recursive=True)):
    if path[len(testlogs) + 1:-len("/test.xml")] not in lane_targets:
        continue
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        continue
    target = path[len(testlogs) + 1:-len("/test.xml")]
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
print(f"lane {lane}: {passed} passed, {failed} failed, {skipped} skipped")
with open(totals, "a") as f:
    f.write(f"{passed} {failed} {skipped}\n")
# A sanitizer report in any of the lane's test logs fails the lane, whether or not its test
# failed: a report from a process whose exit status no test checks (the FUSE daemon that
# FuseDevice forks, halted by halt_on_error with exit 66) would otherwise pass unseen.
report = re.compile(r"(WARNING|ERROR): (ThreadSanitizer|AddressSanitizer|LeakSanitizer)|: runtime error: ")
found = []
for target in sorted(lane_targets):
    log = os.path.join(testlogs, target, "test.log")
    if not os.path.exists(log):
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
  [ $? -eq 3 ] && rc=1
  rm -f "$tests_file"
done
echo "lanes run: $lanes"
awk '{p += $1; f += $2; s += $3} END {printf "total: %d passed, %d failed, %d skipped\n", p, f, s}' "$totals"
if grep -qE "fuse|resmem" /proc/mounts; then
  echo "ci/test.sh: a resmem FUSE mount was left behind:" >&2
  grep -E "fuse|resmem" /proc/mounts >&2
  rc=1
fi
exit $rc
