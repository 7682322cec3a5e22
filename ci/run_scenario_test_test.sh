#!/usr/bin/env bash
# ci/run_scenario_test.sh against a stand-in resmem that records the files it was given and exits
# as each file's name asks:
#   1. a folder: every *.toml under it that `resmem run DIR` would take (a regular file or a link
#      to one) runs exactly once, in parts run side by side (each part started before another
#      ended), and every part's output is printed;
#   2. the exit is the worst of the parts': a failed case (1) over an unavailable backend (3), bad
#      input (2) over a failed case, a crash over everything; all parts passing exits 0;
#   3. one file runs alone, its exit passed on; a folder without scenario files is bad input.
set -u
if [[ -n "${TEST_SRCDIR:-}" ]]; then SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"; else SRC="$(cd "$(dirname "$0")/.." && pwd)"; fi
T=${TEST_TMPDIR:-$(mktemp -d)}
source "$SRC/ci/checks.sh"
WRAP="$SRC/ci/run_scenario_test.sh"

# The stand-in: logs "start PID", each file, "end PID" to $T/calls; sleeps 0.5 s so parts overlap;
# exits 1 for a file named *fail*, 3 for *unavail*, 2 for *bad*, SIGSEGV for *crash*.
cat > "$T/resmem" <<'SH'
#!/bin/bash
shift  # "run"
echo "start $$" >> "$CALLS"
rc=0
for a in "$@"; do
  case $a in
    *.toml) echo "file $a" >> "$CALLS"; echo "ran $a" ;;
  esac
  case $a in *crash*) rc=139 ;; *bad*) [[ $rc == 139 ]] || rc=2 ;; *fail*) [[ $rc == 0 || $rc == 3 ]] && rc=1 ;; *unavail*) [[ $rc == 0 ]] && rc=3 ;; esac
done
sleep 0.5
echo "end $$" >> "$CALLS"
[[ $rc == 139 ]] && kill -SEGV $$
exit $rc
SH
chmod +x "$T/resmem"
export CALLS="$T/calls"
folder() {  # folder NAME FILE...: a folder of empty scenario files (and one file that is not one)
  rm -rf "${T:?}/$1" && mkdir -p "$T/$1/sub" && touch "$T/$1/notes.md"
  local f
  for f in "${@:2}"; do touch "$T/$1/$f"; done
}
run() {  # run PATH: the wrapper on PATH; its output in $T/out, its exit in $rc
  : > "$CALLS"
  bash "$WRAP" "$T/resmem" "$1" fuse > "$T/out" 2>&1
  rc=$?
}

# 1. every file once, in overlapping parts, every part's output printed
folder all a.toml b.toml c.toml sub/d.toml e.toml
mkdir "$T/all/dir.toml" && ln -s a.toml "$T/all/link.toml" && ln -s nowhere "$T/all/dangling.toml"
run "$T/all"
n=$(grep -c '^file ' "$CALLS")
u=$(grep '^file ' "$CALLS" | sort -u | wc -l)
[[ $rc == 0 && $n == 6 && $u == 6 ]] && ok "a folder: 6 files (one a link), each run once, exit 0" ||
  bad "a folder: rc $rc, $n files run ($u distinct), want 0, 6, 6: $(cat "$CALLS")"
grep -qE 'notes.md|dir.toml|dangling' "$CALLS" && bad "a file that is not a scenario was run: $(cat "$CALLS")" ||
  ok "only *.toml files run, as resmem run DIR takes them (not a folder, not a dangling link)"
parts=$(grep -c '^start ' "$CALLS")
first_end=$(grep -n '^end ' "$CALLS" | head -1 | cut -d: -f1)
last_start=$(grep -n '^start ' "$CALLS" | tail -1 | cut -d: -f1)
if (( $(nproc) < 2 )); then
  echo "note: one core here: the parts' overlap is not checked (nproc $(nproc))"
elif ((parts >= 2 && last_start < first_end)); then ok "$parts parts, side by side"
else bad "parts not side by side: $(cat "$CALLS")"; fi
[[ $(grep -c '^ran ' "$T/out") == 6 ]] && ok "every part's output printed" || bad "output: $(cat "$T/out")"

# 2. the worst exit wins, across two parts (files dealt in sorted order: 1st, 3rd... to part 1)
export RESMEM_SCENARIO_PARTS=2
worst() {  # worst WANT FILE...: a folder of FILEs exits WANT
  folder w "${@:2}"
  run "$T/w"
  [[ $rc == "$1" ]] && ok "exit $1 for ${*:2}" || bad "exit $rc for ${*:2}, want $1: $(tail -3 "$T/out")"
}
worst 1 a.toml unavail.toml fail.toml b.toml
worst 1 fail.toml unavail.toml
worst 3 a.toml unavail.toml b.toml
worst 2 bad.toml fail.toml
worst 2 a.toml fail.toml bad.toml
worst 139 bad.toml crash.toml

unset RESMEM_SCENARIO_PARTS

# 3. one file; an empty folder
folder one x.toml fail.toml
run "$T/one/x.toml"
[[ $rc == 0 && $(grep -c '^file ' "$CALLS") == 1 ]] && ok "one file runs alone, exit 0" || bad "one file: rc $rc: $(cat "$CALLS")"
run "$T/one/fail.toml"
[[ $rc == 1 ]] && ok "one failing file: exit 1" || bad "one failing file: exit $rc"
folder none
run "$T/none"
[[ $rc == 2 ]] && grep -q "no \*.toml" "$T/out" && ok "a folder without scenario files: exit 2, named" ||
  bad "empty folder: exit $rc: $(cat "$T/out")"
finish run_scenario_test_test
