#!/usr/bin/env bash
# `resmem run --junit FILE` as a CI meets it: a folder with a passing, a failing and an N/A
# scenario (and a sweep) gives the testcases, skipped, failure and counts a CI reads, valid against
# ci/junit/junit.xsd; odd characters in names and messages stay well-formed; an unwritable path
# stops the run before any case with exit 2, naming the problem and the way out.
set -u
R=$(realpath "$1") CHECK=$(realpath "$2") XSD=$(realpath "$3")
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh
mkdir -p "$T/suite/odd"
cat > "$T/suite/pass.toml" <<'TOML'
[scenario]
name = "junit-pass"
kind = "check"
seed = 3
[sweep]
reservation = ["64M", "128M"]
[machine]
preset = "qemu-q35-2g"
cmdline = "memmap=${reservation}$0x40000000"
[[step]]
do = "open"
[[step]]
do = "info"
expect = { size = "${reservation}" }
TOML
cat > "$T/suite/fail.toml" <<'TOML'
[scenario]
name = "junit-fail"
kind = "check"
seed = 11
[machine]
preset = "qemu-q35-2g"
cmdline = "memmap=64M$0x40000000"
[[step]]
do = "open"
[[step]]
do = "info"
expect = { size = "32M" }
TOML
cat > "$T/suite/odd/na.toml" <<'TOML'
[scenario]
name = "junit-na <&> \"quoted\""
kind = "check"
not_applicable.sim = "needs <real> hardware & a \"GPU\" - caf\u00e9"
[machine]
preset = "qemu-q35-2g"
cmdline = "memmap=64M$0x40000000"
[[step]]
do = "open"
TOML
(cd "$T" && "$R" run suite --junit "$T/out.xml") > "$T/run.log" 2>&1
rc=$?
if [[ $rc == 1 ]]; then ok "exit 1 with a failing case"; else bad "exit $rc, want 1"; cat "$T/run.log"; fi
if python3 "$CHECK" --xsd "$XSD" "$T/out.xml"; then ok "valid against junit.xsd, counts match"; else bad "schema or counts"; cat "$T/out.xml"; fi
# The elements, by XPath: python3's ElementTree reads what a CI reads.
python3 - "$T/out.xml" <<'PY' || fails=$((fails + 1))
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
fails = 0
def expect(what, cond):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond
suites = {s.get("name"): s for s in root.findall("testsuite")}
expect("a testsuite per folder: suite, suite.odd", sorted(suites) == ["suite", "suite.odd"])
expect("totals: 4 tests, 1 failure, 1 skipped, 0 errors",
       (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("4", "1", "1", "0"))
s = suites.get("suite")
expect("suite counts 3 tests, 1 failure, 0 skipped",
       s is not None and (s.get("tests"), s.get("failures"), s.get("skipped")) == ("3", "1", "0"))
cases = {c.get("name"): c for c in root.iter("testcase")}
expect("sweep cases named with their case", "junit-pass [reservation=64M]" in cases and "junit-pass [reservation=128M]" in cases)
p = cases.get("junit-pass [reservation=64M]")
expect("passing case: classname the folder, a time, no failure, verdict in system-out",
       p is not None and p.get("classname") == "suite" and float(p.get("time")) >= 0
       and p.find("failure") is None and p.find("skipped") is None
       and p.findtext("system-out", "").startswith("PASSED (check, seed 3, suite/pass.toml)"))
f = cases.get("junit-fail")
fe = f.find("failure") if f is not None else None
expect("failing case has a <failure type=FAILED>", fe is not None and fe.get("type") == "FAILED")
if fe is not None:
    expect("failure message names the step and what it observed",
           "step 2 (info, line 10)" in fe.get("message", "") and "observed" in fe.get("message", ""))
    expect("failure text has the step's expectation", "step 2 (info, line 10) FAIL: expected size=32M: " in (fe.text or ""))
    expect("failure text has the replay command",
           "seed 11; replay: resmem run suite/fail.toml --backend sim --seed 11" in (fe.text or ""))
n = cases.get('junit-na <&> "quoted"')
expect("odd characters in the name survive the round trip", n is not None)
if n is not None:
    sk = n.find("skipped")
    expect("N/A is <skipped> with its reason, odd characters intact",
           sk is not None and sk.get("message") == 'N/A: needs <real> hardware & a "GPU" - caf\u00e9')
    expect("N/A classname is its folder", n.get("classname") == "suite.odd")
sys.exit(1 if fails else 0)
PY
# An unwritable --junit path: exit 2 before any case runs, naming the path and the way out.
out=$("$R" run "$T/suite/pass.toml" --junit "$T/no/such/dir/out.xml" 2>&1); rc=$?
if [[ $rc == 2 ]] && grep -q "cannot write the JUnit report --junit $T/no/such/dir/out.xml: No such file or directory; give a file in a folder that exists" <<<"$out" \
   && ! grep -q "junit-pass" <<<"$out"; then
  ok "unwritable --junit: exit 2 before running, names the problem and the way out"
else
  bad "unwritable --junit: rc $rc, output: $out"
fi
# UNAVAILABLE is skipped too (no GPU here; on a GPU host the case passes and this is not judged).
"$R" run --backend cuda "$T/suite/pass.toml" --junit "$T/cuda.xml" > "$T/cuda.log" 2>&1
if grep -q "UNAVAILABLE" "$T/cuda.log"; then
  if grep -q '<skipped message="UNAVAILABLE: ' "$T/cuda.xml" && python3 "$CHECK" --xsd "$XSD" "$T/cuda.xml" > /dev/null; then
    ok "UNAVAILABLE is <skipped> with the reason"
  else bad "UNAVAILABLE not skipped: $(cat "$T/cuda.xml")"; fi
else
  echo "ok   UNAVAILABLE not judged: this host has a GPU ($(grep -c PASSED "$T/cuda.log") passed)"
fi
echo "--- sample: $T/out.xml"; cat "$T/out.xml"
finish "junit_test"
