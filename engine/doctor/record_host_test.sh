#!/bin/bash
# `resmem doctor --record` on this very machine (the build machine or CI), then the recording
# replayed on the simulator: the same findings and the same usable RAM. A machine whose sources
# cannot be read says so and fails (no silent pass).
set -u
R=$1
T=${TEST_TMPDIR:-$(mktemp -d)}
# A machine that lacks what the record reads (root for /proc/iomem's addresses, /proc/iomem
# itself) cannot be recorded: the test says it skipped, with the reason, in its JUnit XML, which
# ci/test.sh's summary lists (docs/build.md, "Hermetic tests"); every other failure fails.
skip() {
  echo "record_host_test: SKIPPED: $1"
  python3 - "${XML_OUTPUT_FILE:-/dev/null}" "$1" <<'PY'
import html, sys
xml, reason = sys.argv[1], sys.argv[2]
with open(xml, "w") as f:
    f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="record_host_test" '
            'tests="1" failures="0" errors="0" skipped="1">\n<testcase name="record_host_test" '
            'classname="record_host_test"><skipped message="%s"/></testcase>\n</testsuite></testsuites>\n'
            % html.escape(reason))
PY
  exit 0
}
[[ $(id -u) == 0 ]] || skip "needs root: /proc/iomem shows every address as 0 to other users"
[[ -r /proc/iomem ]] || skip "this machine has no readable /proc/iomem to record"
out=$("$R" doctor --record "$T/rec" 2>&1); rc=$?
echo "$out" | tail -5
if [[ ! -f "$T/rec/scenario.toml" ]]; then
  echo "FAIL: no recording written (doctor exit $rc); this test needs /proc/iomem as root and /sys/firmware/memmap"
  exit 1
fi
echo "recorded: $(ls "$T/rec" | tr '\n' ' ')"
grep -E '^(kernel|phys_addr_bits) = ' "$T/rec/machine.toml"
"$R" run --verbose "$T/rec/scenario.toml"; rc=$?
if [[ $rc != 0 ]]; then echo "FAIL: the recording of this machine does not replay (exit $rc)"; exit 1; fi
echo "ok: this machine's recording replays on the simulator with the same findings"
