#!/usr/bin/env bash
# ci/qemu/kmod_lane_pair.sh and junit_merge.py against a stand-in kmod_lane.sh that records when
# it ran and with which files, then writes the JUnit file (or fails) as each case asks:
#   1. two passing lanes: exit 0; they ran side by side (each started before the other ended),
#      each with its own TEST_TMPDIR, JUnit file and outputs folder named after it; the merged
#      file holds both suites, in the order of the lines, and passes ci/junit/check_junit.py; each
#      lane's log is printed whole, in that order;
#   1a. side by side, both get one existing folder (RESMEM_LANE_SYNC) and the lane count, which
#       kmod_lane.sh's engine part reads before it starts its later boots beside its first;
#   1b. with one core (RESMEM_PAIR_CPUS=1) they run one after the other, and the log says so,
#       with no sync folder;
#   1c. three lines on two cores: the first two side by side (one sync folder, count 2), the third
#       after both ended, alone (no sync folder), and the log says so;
#   2. one lane with a failed case: the pair exits non-zero and the failure is in the file;
#   3. a lane that dies before writing its JUnit file, and one that exits non-zero while its file
#      passes: each becomes an errored case named "lane" in a suite named after it; the other
#      lane's suite is kept;
#   4. a wrong --part is refused with the way out, and runs no lane;
#   5. SIGTERM (Bazel's timeout): no lane process nor a lane's child is left, and the logs so far
#      are printed.
# Usage: kmod_lane_pair_test.sh (in Bazel: the files are in the runfiles' ci/.)
set -u
if [[ -n "${TEST_SRCDIR:-}" ]]; then SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"; else SRC="$(cd "$(dirname "$0")/../.." && pwd)"; fi
T=${TEST_TMPDIR:-$(mktemp -d)}
source "$SRC/ci/checks.sh"

D="$T/qemu"
mkdir -p "$D"
cp "$SRC/ci/qemu/kmod_lane_pair.sh" "$SRC/ci/qemu/junit_merge.py" "$D/"
CHECK="$SRC/ci/junit/check_junit.py"
# The stand-in: STUB_<line with _> = ok | fail | noxml | lie | hang; STUB_LOG = where it records.
cat >"$D/kmod_lane.sh" <<'STUB'
#!/bin/bash
line= part=
while (($#)); do case "$1" in --kernel-line) line=$2; shift 2 ;; --part) part=$2; shift 2 ;; *) exit 9 ;; esac; done
key="STUB_${line//./_}"
mode=${!key:-ok}
name="kmod_lane_${line//./_}_$part"
sync_dir=${RESMEM_LANE_SYNC:-}
[[ -z $sync_dir || -d $sync_dir ]] || sync_dir="$sync_dir(missing)"
echo "start $name $(date +%s.%N) tmp=$TEST_TMPDIR xml=$XML_OUTPUT_FILE out=$TEST_UNDECLARED_OUTPUTS_DIR sync=${sync_dir:--} count=${RESMEM_LANE_COUNT:--}" >>"$STUB_LOG"
echo "log line of $name"
touch "$TEST_TMPDIR/mine" "$TEST_UNDECLARED_OUTPUTS_DIR/console.log"
[[ $mode == hang ]] && { sleep 61.5; exit 0; }  # 61.5: the lane's child (its QEMU), found by pgrep below
sleep 1
echo "end $name $(date +%s.%N)" >>"$STUB_LOG"
[[ $mode == noxml ]] && { echo "ERROR: died early" >&2; exit 3; }
failure=
[[ $mode == fail ]] && failure='<failure message="c2">wrong</failure>'
cat >"$XML_OUTPUT_FILE" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="$name" tests="2" failures="$([[ -n $failure ]] && echo 1 || echo 0)" errors="0" skipped="0">
<testcase name="c1" classname="$name"/><testcase name="c2" classname="$name">$failure</testcase>
</testsuite></testsuites>
EOF
[[ $mode == ok ]] && exit 0
exit 1
STUB
chmod 755 "$D/kmod_lane.sh" "$D/kmod_lane_pair.sh"

# run CASE [STUB_x=mode...]: the pair on --part engine in its own folder; sets RC, OUTD, LOGF.
run() {
	local c=$1
	shift
	OUTD="$T/$c/out" LOGF="$T/$c/stdout"
	mkdir -p "$OUTD" "$T/$c/tmp"
	env "$@" STUB_LOG="$T/$c/stub.log" TEST_TMPDIR="$T/$c/tmp" XML_OUTPUT_FILE="$T/$c/test.xml" \
		TEST_UNDECLARED_OUTPUTS_DIR="$OUTD" "$D/kmod_lane_pair.sh" --part engine --kernel-lines "${LINES:-6.1,6.12}" >"$LOGF" 2>&1
	RC=$?
}
# suites XML: the file's suite names and their cases' outcomes, as one line.
suites() {
	python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
print(" ".join("%s[%s]" % (s.get("name"), ",".join(
    c.get("name") + ("!" if c.find("failure") is not None else "?" if c.find("error") is not None else "")
    for c in s.findall("testcase"))) for s in r.findall("testsuite")))
PY
}
# lanes_ran STUB_LOG: how the stand-in's two lanes ran, from the times it recorded: "side by side"
# (each started before the other ended), "6.1 then 6.12" or "6.12 then 6.1".
lanes_ran() {
	python3 - "$1" <<'PY'
import sys
start, end = {}, {}
for l in open(sys.argv[1]):
    w = l.split()
    (start if w[0] == "start" else end)[w[1]] = float(w[2])
a, b = "kmod_lane_6_1_engine", "kmod_lane_6_12_engine"
print("6.1 then 6.12" if start[b] >= end[a] else "6.12 then 6.1" if start[a] >= end[b] else "side by side")
PY
}

# 1. both pass
run both
s=$(suites "$T/both/test.xml")
want="kmod_lane_6_1_engine[c1,c2] kmod_lane_6_12_engine[c1,c2]"
[[ $RC == 0 && $s == "$want" ]] && ok "two passing lanes: exit 0, both suites in order ($s)" || bad "two passing lanes: rc $RC, suites '$s' (want '$want')"
python3 "$CHECK" "$T/both/test.xml" >/dev/null && ok "the merged file passes check_junit.py" || bad "check_junit.py: $(python3 "$CHECK" "$T/both/test.xml")"
if [[ $(lanes_ran "$T/both/stub.log") == "side by side" ]]; then
	ok "the lanes ran side by side"
else
	bad "the lanes ran one after the other: $(cat "$T/both/stub.log")"
fi
n_tmp=$(grep -o 'tmp=[^ ]*' "$T/both/stub.log" | sort -u | wc -l)
n_xml=$(grep -o 'xml=[^ ]*' "$T/both/stub.log" | sort -u | wc -l)
if [[ $n_tmp == 2 && $n_xml == 2 && -e "$OUTD/kmod_lane_6_1_engine/console.log" && -e "$OUTD/kmod_lane_6_12_engine/console.log" ]]; then
	ok "each lane had its own TEST_TMPDIR, JUnit file and outputs folder"
else
	bad "lanes shared files: $n_tmp tmp dirs, $n_xml xml files; outputs: $(cd "$OUTD" && find . | tr '\n' ' ')"
fi
# Side by side, both lanes get one folder to mark their first boot's progress in, and the count.
syncs=$(grep -o 'sync=[^ ]* count=[^ ]*' "$T/both/stub.log" | sort -u)
if [[ $(wc -l <<<"$syncs") == 1 && $syncs == "sync=/"*" count=2" && $syncs != *missing* ]]; then
	ok "both lanes got one existing sync folder and the lane count ($syncs)"
else
	bad "the lanes' sync folder: $syncs"
fi
order=$(grep -n '^==== \|^log line of' "$LOGF" | cut -d: -f2- | tr '\n' '|')
want_order="==== kmod_lane_6_1_engine (exit) ====|log line of kmod_lane_6_1_engine|==== kmod_lane_6_12_engine (exit) ====|log line of kmod_lane_6_12_engine|"
[[ $order == "$want_order" ]] && ok "each lane's log printed whole, in order" || bad "logs: '$order'"

# 1b. one core: the lanes one after the other, said in the log, the same merged file
run onecore RESMEM_PAIR_CPUS=1
s=$(suites "$T/onecore/test.xml")
if [[ $RC == 0 && $s == "$want" && $(lanes_ran "$T/onecore/stub.log") == "6.1 then 6.12" ]]; then
	ok "one core: the lanes ran one after the other, the same suites"
else
	bad "one core: rc $RC, suites '$s', $(cat "$T/onecore/stub.log")"
fi
grep -q "1 core(s) for 2 lanes: one after the other" "$LOGF" && ok "and the log says why" || bad "one core: the log does not say so"
# One after the other, no lane waits for another's first boot: no sync folder.
[[ $(grep -o 'sync=[^ ]*' "$T/onecore/stub.log" | sort -u) == "sync=-" ]] && ok "one core: no sync folder" ||
	bad "one core: $(grep -o 'sync=[^ ]*' "$T/onecore/stub.log" | sort -u | tr '\n' ' ')"
# 1c. three lines on two cores: a batch of two, then the third
LINES=6.1,6.12,7.3 run three RESMEM_PAIR_CPUS=2
s=$(suites "$T/three/test.xml")
order3=$(python3 - "$T/three/stub.log" <<'PY'
import sys
start, end = {}, {}
for l in open(sys.argv[1]):
    w = l.split()
    (start if w[0] == "start" else end)[w[1]] = float(w[2])
a, b, c = "kmod_lane_6_1_engine", "kmod_lane_6_12_engine", "kmod_lane_7_3_engine"
pair = start[b] < end[a] and start[a] < end[b]
after = start[c] >= max(end[a], end[b])
print("6.1 and 6.12 side by side, then 7.3" if pair and after else "start %s end %s" % (start, end))
PY
)
want3="kmod_lane_6_1_engine[c1,c2] kmod_lane_6_12_engine[c1,c2] kmod_lane_7_3_engine[c1,c2]"
if [[ $RC == 0 && $s == "$want3" && $order3 == "6.1 and 6.12 side by side, then 7.3" ]]; then
	ok "three lines on two cores: $order3, the three suites in order"
else
	bad "three lines on two cores: rc $RC, suites '$s', $order3"
fi
grep -q "2 core(s) for 3 lanes: 2 side by side at a time" "$LOGF" && ok "and the log says how" || bad "three lines: the log does not say how they ran"
sync3=$(grep -o 'start kmod_lane_[0-9_]*_engine.*' "$T/three/stub.log" | sed 's/^start \([^ ]*\) .*\(sync=[^ ]*\) \(count=[^ ]*\)$/\1 \2 \3/' | sed 's#sync=/[^ ]*#sync=DIR#' | sort | tr '\n' '|')
want_sync3="kmod_lane_6_12_engine sync=DIR count=2|kmod_lane_6_1_engine sync=DIR count=2|kmod_lane_7_3_engine sync=- count=1|"
[[ $sync3 == "$want_sync3" ]] && ok "the batch of two shares a sync folder, the third has none" || bad "three lines' sync: '$sync3' (want '$want_sync3')"
run onecore_fail RESMEM_PAIR_CPUS=1 STUB_6_1=fail
s=$(suites "$T/onecore_fail/test.xml")
[[ $RC != 0 && $s == "kmod_lane_6_1_engine[c1,c2!] kmod_lane_6_12_engine[c1,c2]" ]] && ok "one core: the first lane's failure still fails the pair" || bad "one core, failing: rc $RC, suites '$s'"

# 2. a failed case
run fail STUB_6_12=fail
s=$(suites "$T/fail/test.xml")
[[ $RC != 0 && $s == "kmod_lane_6_1_engine[c1,c2] kmod_lane_6_12_engine[c1,c2!]" ]] && ok "a failed case fails the pair and is in the file" || bad "failed case: rc $RC, suites '$s'"

# 3. no JUnit file; a non-zero exit with a passing file
run noxml STUB_6_1=noxml STUB_6_12=lie
s=$(suites "$T/noxml/test.xml")
want="kmod_lane_6_1_engine[lane?] kmod_lane_6_12_engine[c1,c2] kmod_lane_6_12_engine[lane?]"
[[ $RC != 0 && $s == "$want" ]] && ok "a lane without a file, and one whose exit its file hides, are errored cases" || bad "noxml/lie: rc $RC, suites '$s' (want '$want')"
python3 "$CHECK" "$T/noxml/test.xml" >/dev/null && ok "that file passes check_junit.py too" || bad "check_junit.py: $(python3 "$CHECK" "$T/noxml/test.xml")"
grep -q "died early" "$LOGF" && ok "the dead lane's log is printed" || bad "the dead lane's log is missing"

# 4. a wrong part
out=$("$D/kmod_lane_pair.sh" --part all 2>&1)
rc=$?
[[ $rc != 0 && $out == *"use driver or engine"* ]] && ok "--part all refused: ${out#*ERROR: }" || bad "--part all: rc $rc, '$out'"

# 5. SIGTERM
mkdir -p "$T/term/out" "$T/term/tmp"
STUB_6_1=hang STUB_6_12=hang STUB_LOG="$T/term/stub.log" TEST_TMPDIR="$T/term/tmp" XML_OUTPUT_FILE="$T/term/test.xml" \
	TEST_UNDECLARED_OUTPUTS_DIR="$T/term/out" "$D/kmod_lane_pair.sh" --part engine >"$T/term/stdout" 2>&1 &
pair=$!
for _ in $(seq 50); do [[ $(grep -c '^start' "$T/term/stub.log" 2>/dev/null) == 2 ]] && break; sleep 0.1; done
kill -TERM "$pair"
wait "$pair"
rc=$?
sleep 0.3
left=$(( $(pgrep -f "$D/kmod_lane.sh" | wc -l) + $(pgrep -fx "sleep 61.5" | wc -l) ))
[[ $rc != 0 && $left == 0 ]] && ok "SIGTERM stops every lane (exit $rc)" || bad "SIGTERM: rc $rc, $left lane processes left"
grep -q "log line of kmod_lane_6_12_engine" "$T/term/stdout" && ok "and prints the logs so far" || bad "SIGTERM: no logs printed: $(cat "$T/term/stdout")"

finish "kmod_lane_pair_test"
