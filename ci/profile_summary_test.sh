#!/usr/bin/env bash
# ci/profile_summary.py on profiles made here in the format Bazel writes (`--profile=FILE.gz`: a
# gzipped JSON object whose traceEvents are Chrome trace events; actions are complete events,
# "ph": "X", of category "action processing", timed in microseconds): the span, the actions per
# kind, the last compile's end and the longest compiles and tests it prints; a profile with no
# events; and a file that is not a profile, refused with exit 2 and the reason.
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh

# A lane of 100 s: three compiles (the last ending at 35 s), one link, two tests, and a
# non-action event that only widens the span.
python3 - "$T/lane.profile.gz" <<'PY'
import gzip, json, sys
t0 = 5_000_000
def act(name, start_s, dur_s):
    return {"ph": "X", "cat": "action processing", "name": name, "ts": t0 + int(start_s * 1e6), "dur": int(dur_s * 1e6)}
events = [
    {"ph": "i", "cat": "general information", "name": "build start", "ts": t0},
    act("Compiling engine/a.cc", 0, 10), act("Compiling engine/b.cc", 5, 30), act("Compiling engine/c.cc", 20, 12),
    act("Linking engine/cli/resmem", 41, 4),
    act("Testing //ci/qemu:kmod_lane_6_1", 45, 50), act("Testing //engine/suite:determinism_test", 46, 20),
    {"ph": "X", "cat": "critical path component", "name": "action 'x'", "ts": t0 + 99_000_000, "dur": 1_000_000},
]
with gzip.open(sys.argv[1], "wt") as f:
    json.dump({"otherData": {}, "traceEvents": events}, f)
PY
out=$(python3 ci/profile_summary.py plain "$T/lane.profile.gz" 2>&1); rc=$?
echo "$out"
want() {
  if grep -qF -- "$2" <<<"$out"; then ok "$1"; else bad "$1: no line with '$2'"; fi
}
[ $rc = 0 ] && ok "a profile is summarised (exit 0)" || bad "exit $rc on a good profile"
want "the span runs from the first event to the last one's end" "span 100 s"
want "actions per kind, summed, the costliest first" "actions: Testing 2 (70 s), Compiling 3 (52 s), Linking 1 (4 s)"
want "the last compile's end, from the first event" "the last compile ended at 35 s"
want "the longest compiles, longest first" "longest compiling: engine/b.cc 30 s, engine/c.cc 12 s, engine/a.cc 10 s"
want "the longest tests, longest first" "longest testing: //ci/qemu:kmod_lane_6_1 50 s, //engine/suite:determinism_test 20 s"

python3 -c 'import gzip, json, sys; json.dump({"traceEvents": []}, gzip.open(sys.argv[1], "wt"))' "$T/empty.profile.gz"
out=$(python3 ci/profile_summary.py asan "$T/empty.profile.gz" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "holds no events" <<<"$out" && ok "a profile with no events says so" ||
  bad "empty profile: exit $rc: $out"

echo "not a profile" > "$T/plain.txt"
for f in "$T/plain.txt" "$T/missing.profile.gz"; do
  out=$(python3 ci/profile_summary.py plain "$f" 2>&1); rc=$?
  if [ $rc = 2 ] && grep -q "cannot read $f as Bazel's profile" <<<"$out" && grep -q -- "--profile=FILE.gz" <<<"$out" &&
     ! grep -q Traceback <<<"$out"; then
    ok "$(basename "$f") is refused with exit 2, the reason and the way out"
  else
    bad "$(basename "$f"): exit $rc: $out"
  fi
done

finish "profile_summary_test"
