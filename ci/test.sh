#!/usr/bin/env bash
# Set-up, the layer check (ci/layers.sh: upward dependencies fail the build), and the whole test
# suite: `bazel test //...` (unit tests, every scenario file, the FUSE
# tests, the QEMU kernel-module lane, the GPU tests that report "skipped: no GPU" where there is
# none), then a summary of test cases from the JUnit XML, skipped ones by name with the reason,
# and a check that no FUSE mount was left behind.
set -uo pipefail
cd "$(dirname "$0")/.."
ci/setup.sh || exit $?
# A FUSE mount of resmem's left by an earlier run that was killed would fail the no-mount checks:
# say so and remove it first.
grep -E "fuse\.resmem" /proc/mounts | while read -r _ dir _; do
  echo "ci/test.sh: removing a resmem FUSE mount an earlier run left at $dir" >&2
  umount -l "$dir" || true
done
ci/layers.sh
layers_rc=$?
start=$(date +%s)
bazel test //... "$@"
rc=$?
[ "$layers_rc" -eq 0 ] || { echo "ci/test.sh: the layer check failed (ci/layers.sh above)" >&2; rc=1; }
echo "bazel test //... finished in $(( $(date +%s) - start )) s with exit code $rc"
python3 - <<'PY' || true
import glob, re, xml.etree.ElementTree as ET
passed = failed = skipped = 0
skips = []
for path in sorted(glob.glob("bazel-testlogs/**/test.xml", recursive=True)):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        continue
    target = path[len("bazel-testlogs/"):-len("/test.xml")]
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
    print("test cases skipped here, with the reason:")
    print("\n".join(skips))
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
if grep -qE "fuse|resmem" /proc/mounts; then
  echo "ci/test.sh: a resmem FUSE mount was left behind:" >&2
  grep -E "fuse|resmem" /proc/mounts >&2
  rc=1
fi
exit $rc
