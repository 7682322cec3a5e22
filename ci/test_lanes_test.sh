#!/usr/bin/env bash
# ci/test.sh's lanes (docs/build.md "Where CI's time goes"), run against a stand-in `bazel` that
# logs each call with its nice value and the autogroup setting it saw, and sleeps instead of
# testing:
#   1. both lanes: the asan lane's part 1 runs beside the plain lane (it starts before the plain
#      lane's `bazel test` ends) at nice 19, in its own output base (shut down first), with
#      --config=asan and the sanitizer tags plus -exclusive, its tests by name; its part 2 runs
#      after both, at the caller's nice, without -exclusive; autogroup is 0 while they run and
#      put back after; the arguments reach every lane's `bazel test`; exit 0;
#   2. a failing part 2 (the stand-in exits 3) fails the run, and says which part; a test that
#      timed out in part 1 (its XML then part 2's, passing) fails it and is named by Bazel's verdict;
#   3. RESMEM_CI_LANES=plain: no second output base, autogroup left alone;
#   4. other FUSE mounts (fusectl, sshfs) are not "a resmem FUSE mount left behind"; a resmem-fuse
#      mount is, and fails the run;
#   5. a failing layer check fails the run and says so;
#   6. the lanes' summaries count a sharded test's cases (bazel-testlogs/T/shard_N_of_M/test.xml),
#      name a JUnit file that does not parse, and a sanitizer report in a shard's log fails the run.
# ci/setup.sh, ci/layers.sh and ci/profile_summary.py are stand-ins too: this tests the lanes'
# order and settings, not the suite. Usage: test_lanes_test.sh CI_TEST_SH
set -u
CI_TEST=$(realpath "${1:-ci/test.sh}")
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh
NI=$(awk '{print $19}' /proc/$$/stat)  # the caller's nice: the plain lane and part 2 run at it

# A copy of the tree's shape: ci/test.sh and its stand-in helpers.
R="$T/repo"
mkdir -p "$R/ci" "$T/bin"
cp "$CI_TEST" "$R/ci/test.sh"
printf '#!/bin/sh\nexit 0\n' > "$R/ci/setup.sh"
printf '#!/bin/sh\n[ -z "${STUB_LAYERS_FAIL:-}" ]\n' > "$R/ci/layers.sh"
printf 'print("profile_summary: stand-in")\n' > "$R/ci/profile_summary.py"
chmod +x "$R/ci/"*.sh

# The stand-in bazel: `STUB_LOG` gets "call|end N nice=NI ag=AUTOGROUP base=BASE cmd=CMD ARGS...",
# N numbering the lines in order; `test` sleeps STUB_SLEEP s, runs STUB_AFTER_TEST, and exits 3
# where STUB_FAIL names its part (plain, asan1, asan2); STUB_AWAIT_ASAN below.
cat > "$T/bin/bazel" <<'SH'
#!/usr/bin/env bash
base=plain
while [[ ${1:-} == --* ]]; do
  case $1 in --output_base=*) base=${1#--output_base=}; base=${base##*-} ;; esac
  shift
done
cmd=$1; shift
ni=$(awk '{print $19}' /proc/$$/stat)
line() {
  ( flock 9
    echo "$1 $(wc -l < "$STUB_LOG") nice=$ni ag=$(cat "$STUB_AUTOGROUP") base=$base cmd=$cmd ${*:2}" >> "$STUB_LOG"
  ) 9>> "$STUB_LOG"
}
line call "$@"
rc=0
case $cmd in
  info) [[ $1 == output_base ]] && echo "$STUB_BASE" || echo "$STUB_BASE/$base-testlogs" ;;
  query) printf '//a:one_test\n//a:two_test\n' ;;
  test)
    # With both lanes, the plain lane's test waits (up to 10 s) for the asan lane's part 1 to
    # start: run beside it, that is at once; run after it, never (the overlap check then fails).
    if [[ $base == plain && -n ${STUB_AWAIT_ASAN:-} ]]; then
      for _ in $(seq 100); do grep -q "^call .* base=asan cmd=test" "$STUB_LOG" && break; sleep 0.1; done
    fi
    sleep "${STUB_SLEEP:-1}"
    part=$base; [[ $base != plain ]] && { [[ " $* " == *",-exclusive "* ]] && part=${base}1 || part=${base}2; }
    if [[ ${STUB_FAIL:-} == "$part" ]]; then
      rc=3
      printf '//a:one_test                                   TIMEOUT in 60.1s\n'
      printf '  /tmp/testlogs/a/one_test/test.log\n'
    fi
    [[ -z ${STUB_AFTER_TEST:-} ]] || bash -c "$STUB_AFTER_TEST" ;;
esac
line end "$@"
exit $rc
SH
chmod +x "$T/bin/bazel"

# run NAME [ENV=VALUE...]: ci/test.sh --test_output=errors with the stand-ins; its output in
# $T/NAME.out, its exit code in $T/NAME.rc, the stand-in's log in $T/NAME.log.
run() {
  local name=$1; shift
  : > "$T/$name.log"
  echo 1 > "$T/autogroup"
  : > "$T/mounts"
  env PATH="$T/bin:$PATH" STUB_LOG="$T/$name.log" STUB_BASE="$T/base" STUB_AUTOGROUP="$T/autogroup" \
    RESMEM_CI_AUTOGROUP="$T/autogroup" RESMEM_CI_MOUNTS="$T/mounts" "$@" \
    "$R/ci/test.sh" --test_output=errors > "$T/$name.out" 2>&1
  echo $? > "$T/$name.rc"
}
# The stand-in's lines of one `bazel test`: BASE and PART (1: with -exclusive, 2: without).
calls() { grep -E "^call [0-9]+ .* base=$1 cmd=test" "$T/$2.log" | grep -E -- "$3"; }
order() { awk '{print $2}' <<< "$1" | head -1; }
ends() { grep -E "^end [0-9]+ .* base=$1 cmd=test" "$T/$2.log" | grep -E -- "$3" | awk '{print $2}' | head -1; }

# JUnit XML of NAME's testcases: xml_of FILE pass|skip...
xml_of() {
  local f=$1; shift; mkdir -p "$(dirname "$f")"
  { echo '<testsuites><testsuite name="t">'
    for c in "$@"; do
      if [[ $c == skip ]]; then echo '<testcase name="s"><skipped message="no GPU"/></testcase>'
      else echo '<testcase name="p"/>'; fi
    done
    echo '</testsuite></testsuites>'; } > "$f"
}
L="$T/base/plain-testlogs/a"
xml_of "$L/one_test/shard_1_of_2/test.xml" pass
xml_of "$L/one_test/shard_2_of_2/test.xml" pass skip
xml_of "$L/two_test/test.xml" pass
run both STUB_AWAIT_ASAN=1
grep -q "lane plain: 3 passed, 0 failed, 1 skipped" "$T/both.out" &&
  ok "the plain lane's summary counts both shards of a sharded test" || bad "plain lane's summary: $(grep 'lane plain: [0-9]' "$T/both.out")"
! grep -q "do not parse" "$T/both.out" && ok "no JUnit file is called unreadable when each parses" || bad "a parsing JUnit file called unreadable"
# A JUnit file that does not parse (a control character in a failure's text) is named, not dropped.
cp "$L/two_test/test.xml" "$T/two.xml"
printf '<testsuites><testsuite name="t"><testcase name="p"><failure message="\033[1m"/></testcase></testsuite></testsuites>' > "$L/two_test/test.xml"
run badxml RESMEM_CI_LANES=plain STUB_SLEEP=0.1
cp "$T/two.xml" "$L/two_test/test.xml"
grep -A1 "lane plain: JUnit files that do not parse" "$T/badxml.out" | grep -q "^  //a/two_test: " &&
  grep -q "lane plain: 2 passed, 0 failed, 1 skipped" "$T/badxml.out" &&
  ok "a JUnit file that does not parse is named, its cases left out of the counts" || { bad "an unreadable JUnit file: $(grep -A1 'lane plain' "$T/badxml.out" | head -4)"; }
plain=$(calls plain both '//\.\.\.')
p1=$(calls asan both ',-exclusive ')
p2=$(calls asan both '--target_pattern_file' | grep -v ',-exclusive ')
if [[ $(cat "$T/both.rc") == 0 ]]; then ok "both lanes pass: exit 0"; else bad "both lanes: exit $(cat "$T/both.rc")"; sed 's/^/    /' "$T/both.out"; fi
[[ -n $plain && $plain == *"nice=$NI "* && $plain == *"--test_output=errors"* ]] &&
  ok "plain lane: bazel test //... at the caller's nice ($NI), the arguments passed on" || bad "plain lane's call: '$plain'"
[[ $p1 == *"nice=19 "* && $p1 == *"--config=asan"* && $p1 == *"--test_tag_filters=-no_sanitizer,-suite_sweep,-exclusive"* &&
   $p1 == *"--target_pattern_file="* && $p1 == *"--test_output=errors"* ]] &&
  ok "asan part 1: nice 19, --config=asan, the sanitizer tags and -exclusive, its tests by name" || bad "asan part 1's call: '$p1'"
shutdown=$(grep -E "^call [0-9]+ .* base=asan cmd=shutdown" "$T/both.log" | awk '{print $2}' | head -1)
[[ -n $shutdown && -n $p1 && $shutdown -lt $(order "$p1") ]] &&
  ok "the asan output base's server is shut down before part 1" || bad "no shutdown of the asan base before part 1"
[[ -n $p1 && -n $plain && $(order "$p1") -lt $(ends plain both '//\.\.\.') && $(order "$plain") -lt $(ends asan both ',-exclusive ') ]] &&
  ok "asan part 1 runs beside the plain lane (each starts before the other ends)" || bad "asan part 1 and the plain lane do not overlap"
[[ $p2 == *"nice=$NI "* && $p2 != *"-exclusive"* && $p2 == *"--test_output=errors"* &&
   $(order "$p2") -gt $(ends plain both '//\.\.\.') && $(order "$p2") -gt $(ends asan both ',-exclusive ') ]] &&
  ok "asan part 2: after both, at the caller's nice, its exclusive tests too" || bad "asan part 2's call: '$p2'"
tests_ag=$(grep -E "^call [0-9]+ .* cmd=test" "$T/both.log" | grep -o 'ag=[0-9]*' | sort -u | tr '\n' ' ')
[[ $tests_ag == "ag=0 " && $(cat "$T/autogroup") == 1 ]] &&
  ok "autogroup 0 while the lanes run ($tests_ag), 1 again after" || bad "autogroup during the tests: $tests_ag; after: $(cat "$T/autogroup")"

A="$T/base/asan-testlogs/a/one_test/shard_2_of_2"
mkdir -p "$A" && echo "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1" > "$A/test.log"
run asanreport STUB_AWAIT_ASAN=1
rm -rf "$T/base/asan-testlogs"
[[ $(cat "$T/asanreport.rc") != 0 ]] && grep -q "//a/one_test: 1 report line(s)" "$T/asanreport.out" &&
  ok "a sanitizer report in a shard's log fails the run" || bad "a sanitizer report in a shard's log: exit $(cat "$T/asanreport.rc")"

run fail2 STUB_FAIL=asan2 STUB_AWAIT_ASAN=1
[[ $(cat "$T/fail2.rc") != 0 ]] && grep -q "lane asan: part 2 finished in [0-9]* s with exit code 3" "$T/fail2.out" &&
  ok "a failing asan part 2 fails the run (exit $(cat "$T/fail2.rc")) and names the part" || bad "asan part 2 failing: exit $(cat "$T/fail2.rc")"

# CI's run of 2d3f958: a test timed out in part 1, part 2 ran it again and it passed; no XML held a
# failure, so the run must name it from Bazel's verdict.
run fail1 STUB_FAIL=asan1 STUB_AWAIT_ASAN=1
[[ $(cat "$T/fail1.rc") != 0 ]] && grep -q "lane asan: part 1 finished in [0-9]* s with exit code 3" "$T/fail1.out" &&
  grep -A1 "lane asan, part 1: Bazel's verdicts other than PASSED:" "$T/fail1.out" | grep -q "^  //a:one_test TIMEOUT in 60.1s" &&
  ! grep -q "lane plain: Bazel's verdicts" "$T/fail1.out" &&
  ok "a test that timed out in asan part 1 fails the run and is named by its verdict" || { bad "asan part 1 timing out: exit $(cat "$T/fail1.rc")"; tail -8 "$T/fail1.out" | sed 's/^/    /'; }

run plain RESMEM_CI_LANES=plain
[[ $(cat "$T/plain.rc") == 0 ]] && ! grep -q "base=asan" "$T/plain.log" && grep -q "ag=1 .*cmd=test" "$T/plain.log" &&
  ok "RESMEM_CI_LANES=plain: no asan server, autogroup left at 1" || bad "RESMEM_CI_LANES=plain: exit $(cat "$T/plain.rc"), $(grep -c base=asan "$T/plain.log") asan calls"

# Other FUSE mounts are not ours; a resmem-fuse one is (the stand-in writes it once the lanes ran).
others='fusectl /sys/fs/fuse/connections fusectl rw,nosuid,nodev,noexec,relatime 0 0
user@host:/data /mnt/data fuse.sshfs rw,nosuid,nodev,relatime,user_id=0,group_id=0 0 0'
run fusectl RESMEM_CI_LANES=plain STUB_SLEEP=0.1 STUB_AFTER_TEST="printf '%s\n' '$others' > '$T/mounts'"
[[ $(cat "$T/fusectl.rc") == 0 ]] && ! grep -q "left behind" "$T/fusectl.out" &&
  ok "fusectl and sshfs mounts are not a resmem mount left behind" || bad "other FUSE mounts failed the run: $(grep -m1 "left behind" -A3 "$T/fusectl.out")"
run resmemfuse RESMEM_CI_LANES=plain STUB_SLEEP=0.1 STUB_AFTER_TEST="echo 'resmem-fuse $T/nowhere fuse.resmem rw,nosuid 0 0' >> '$T/mounts'"
[[ $(cat "$T/resmemfuse.rc") != 0 ]] && grep -q "a resmem FUSE mount was left behind" "$T/resmemfuse.out" &&
  ok "a resmem-fuse mount left behind fails the run" || bad "a resmem-fuse mount left behind: exit $(cat "$T/resmemfuse.rc")"

run layers RESMEM_CI_LANES=plain STUB_LAYERS_FAIL=1
[[ $(cat "$T/layers.rc") != 0 ]] && grep -q "the layer check failed" "$T/layers.out" &&
  ok "a failing layer check fails the run" || bad "a failing layer check: exit $(cat "$T/layers.rc")"

finish "test_lanes_test"
