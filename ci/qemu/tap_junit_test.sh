#!/usr/bin/env bash
# ci/qemu/tap_junit.py, the kernel lane's verdict, on consoles made here: the JUnit XML of a clean
# two-boot run (every case with its diagnostics, a case's `# time` as its time attribute, a skip
# with its reason, the parity transcripts against a golden file, the host's cases); and each way
# a run fails: a case that failed, QEMU's edu clamping an address, a boot without its plan, a plan
# its cases do not match, a transcript that differs from the golden file; control characters from
# the console never make the file unreadable. Needs no QEMU.
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh

printf '%s\n' '# the golden device' 'open: ok' 'ioctl_info: mode=pfnmap cache=wb size=64M' > "$T/golden.txt"
printf 'ok\tconftest_PFN_T\tpfn_t present\n' > "$T/host.tsv"
transcripts() {  # every device's transcript, each naming its own mode and cache
  local m
  for m in "pfnmap pfnmap wb" "pages pages wb" "wc pfnmap wc" "uc pfnmap uc"; do
    set -- $m
    printf '# parity-%s| open: ok\n# parity-%s| ioctl_info: mode=%s cache=%s size=64M\n' "$1" "$1" "$2" "$3"
  done
}
# The clean run: boot 1 with three cases (one timed, one skipped), boot 2 with one.
{
  echo "TAP version 13"; echo "1..3"
  echo "# loaded resmem.ko"; echo "# time 1.50 s"; echo "ok 1 - a_module_loads"
  echo "# time 0.25 s"; echo "ok 2 - edu_dma_blocks"
  echo "ok 3 - sig_lockdown_case # SKIP this kernel trusts only its distributor's keys"
  transcripts
  echo "TAP version 13"; echo "1..1"; echo "ok 1 - edu_iommu_dma"
} > "$T/clean.txt"

run() {  # run NAME CONSOLE BOOTS [ONLY]: tap_junit.py's exit status in $rc, its output in $out
  mkdir -p "$T/$1"
  out=$(python3 ci/qemu/tap_junit.py "$2" "$T/$1/test.xml" 0 "$T/golden.txt" "$T/$1" "${4:-}" "" "$3" \
        "$T/host.tsv" kmod_lane_test 6.1.0-test 2>&1)
  rc=$?
}
xml() {  # xml NAME PYTHON-EXPR: evaluates EXPR with `s` the testsuite, `c` its cases by name
  python3 - "$T/$1/test.xml" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot().find("testsuite")
c = {e.get("name"): e for e in s.findall("testcase")}
print(eval(sys.argv[2]))
PY
}
check() {  # check WHAT NAME EXPR WANT
  local got; got=$(xml "$2" "$3" 2>&1)
  [ "$got" = "$4" ] && ok "$1" || bad "$1: $3 gave '$got', want '$4'"
}

run clean "$T/clean.txt" 2
echo "$out"
[ $rc = 0 ] && ok "a clean run exits 0" || bad "clean run: exit $rc"
check "every case is a testcase: 4 guest, 4 parity, 1 edu clamp check, 1 host" clean \
  "(s.get('tests'), s.get('failures'), s.get('errors'), s.get('skipped'))" "('10', '0', '0', '1')"
check "a case's '# time' line is its time attribute" clean "c['a_module_loads'].get('time')" "1.50"
check "a case without one has no time attribute" clean "c['edu_iommu_dma'].get('time')" "None"
check "a case's diagnostics are its system-out" clean "c['a_module_loads'].find('system-out').text" $'loaded resmem.ko\ntime 1.50 s'
check "a skip passes with its reason" clean "c['sig_lockdown_case'].find('skipped').get('message')" \
  "this kernel trusts only its distributor's keys"
check "each parity transcript matches the golden file as the golden device" clean \
  "[c['parity_transcript_%s_matches_golden' % m].find('failure') is None for m in ('pfnmap', 'pages', 'wc', 'uc')]" \
  "[True, True, True, True]"
check "the host's cases come after the guest's" clean "list(c)[-1]" "conftest_PFN_T"
check "the suite is named after the lane, with the kernel" clean \
  "(s.get('name'), s.find('properties/property').get('value'))" "('kmod_lane_test', '6.1.0-test')"
grep -q "guest cases took 2 s in all; the slowest: a_module_loads 1.5 s, edu_dma_blocks 0.2 s" <<<"$out" &&
  ok "the slowest guest cases are listed" || bad "no list of the slowest cases"
[ -s "$T/clean/kmod_parity_wc.txt" ] && grep -q "cache=wc" "$T/clean/kmod_parity_wc.txt" &&
  ok "each live transcript is kept as it was printed" || bad "kmod_parity_wc.txt not kept"

sed 's/^ok 2 - edu_dma_blocks/# the DMA wrote elsewhere\nnot ok 2 - edu_dma_blocks/' "$T/clean.txt" > "$T/failed.txt"
echo "EDU: clamping DMA 0x0000000140000000 to 0x0000000040000000!" >> "$T/failed.txt"
run failed "$T/failed.txt" 2
[ $rc = 1 ] && ok "a failed case makes the run exit 1" || bad "failed case: exit $rc"
check "the failed case carries its diagnostics" failed "c['edu_dma_blocks'].find('failure').text" $'time 0.25 s\nthe DMA wrote elsewhere'
check "QEMU's edu clamping an address fails its own case, with the line" failed \
  "c['edu_device_never_clamped_an_address'].find('failure').text" "EDU: clamping DMA 0x0000000140000000 to 0x0000000040000000!"
check "the counts say so" failed "(s.get('failures'), s.get('errors'))" "('2', '0')"

# A console's control characters (a firmware's ESC sequences) in diagnostics: the file still parses.
sed 's/^# the DMA wrote elsewhere$/# the DMA wrote \x1b[1melsewhere\x1b[0m/; s/^# loaded resmem.ko$/# loaded \x07resmem.ko/' "$T/failed.txt" > "$T/ctrl.txt"
run ctrl "$T/ctrl.txt" 2
check "control characters in a failed case's diagnostics are written as \\xNN, and the file parses" ctrl \
  "c['edu_dma_blocks'].find('failure').text.splitlines()[-1]" 'the DMA wrote \x1b[1melsewhere\x1b[0m'
check "and in a passing case's output" ctrl "c['a_module_loads'].find('system-out').text.splitlines()[0]" 'loaded \x07resmem.ko'

run noplan "$T/clean.txt" 3
[ $rc = 1 ] && ok "a boot that printed no plan makes the run exit 1" || bad "missing plan: exit $rc"
check "and is the lane's error, named" noplan "c['lane'].find('error').get('message')" \
  "2 of 3 guest boots printed their TAP plan (the others crashed, hung or timed out; qemu exit 0)"

sed 's/^1\.\.3$/1..4/' "$T/clean.txt" > "$T/short.txt"
run short "$T/short.txt" 2
[ $rc = 1 ] && ok "cases missing from a plan make the run exit 1" || bad "short run: exit $rc"
check "and the error counts both" short "c['lane'].find('error').get('message')" "plan says 5 cases, console shows 4"

sed 's/^# parity-pages| open: ok$/# parity-pages| open: EACCES/' "$T/clean.txt" > "$T/parity.txt"
run parity "$T/parity.txt" 2
[ $rc = 1 ] && grep -q "^kmod-lane:   +open: EACCES" <<<"$out" && ok "a transcript that differs fails, and the diff is printed" ||
  { echo "$out"; bad "parity diff: exit $rc"; }
check "only that device's case fails" parity \
  "[m for m in ('pfnmap', 'pages', 'wc', 'uc') if c['parity_transcript_%s_matches_golden' % m].find('failure') is not None]" "['pages']"

run only "$T/clean.txt" 2 parity_probe_wc
check "RESMEM_ONLY naming one probe checks that transcript alone" only \
  "[n for n in c if n.startswith('parity_transcript_')]" "['parity_transcript_wc_matches_golden']"

python3 ci/qemu/tap_junit.py only-one-argument > "$T/usage.txt" 2>&1
rc=$?
[ $rc != 0 ] && grep -q "^usage: tap_junit.py" "$T/usage.txt" && ok "wrong arguments: the usage, and a failing exit" ||
  bad "wrong arguments: exit $rc"

# junit_case.py (one case as a whole file: the debug lane's skip) escapes its message the same way.
python3 ci/qemu/junit_case.py "$T/case.xml" lane lane_case lane skip $'no cache <entry> & \x01 in it' > "$T/case.out" 2>&1
rc=$?
got=$(python3 -c 'import sys, xml.etree.ElementTree as ET
e = ET.parse(sys.argv[1]).getroot().find("testsuite/testcase/skipped")
print(e.get("message"))' "$T/case.xml" 2>&1)
[ $rc = 0 ] && [ "$got" = 'no cache <entry> & \x01 in it' ] &&
  ok "junit_case.py: a skip's reason with markup and a control character parses back as written (the control as \\xNN)" ||
  bad "junit_case.py: exit $rc, reason '$got' ($(cat "$T/case.out"))"

finish "tap_junit_test"
