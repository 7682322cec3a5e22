#!/usr/bin/env bash
# ci/hil_run_check.py for the folders of docs/hil/ recorded with ci/hil-run.sh from the start
# (runs.txt entries `## runN`, no old run*.sh): every invocation must read as one under
# `ci/hil-run.sh --dry-run`. Those need no git history, so every such folder is checked here.
# The folders whose runs.txt replaced old scripts are compared with those scripts from git
# history, which a test's sandbox does not have: `python3 ci/hil_run_check.py` checks them by hand
# (this test says how many). Then, in a made-up folder: a bad invocation, an entry that is not an
# invocation and a missing runs.txt are each named, with exit 1.
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh

new=() old=0
for f in docs/hil/*/runs.txt; do
  s=$(basename "$(dirname "$f")")
  if grep -q '^## run[^ ]*\.sh$' "$f"; then old=$((old + 1)); else new+=(--session "$s"); fi
done
n=$((${#new[@]} / 2))
[ "$n" -gt 0 ] || bad "no folder of docs/hil/ is recorded with ci/hil-run.sh from the start"
out=$(python3 ci/hil_run_check.py "${new[@]}" 2>&1); rc=$?
echo "$out" | tail -3
if [ $rc = 0 ] && grep -q "^\([0-9]*\) of \1 runs reproduce" <<<"$out" && ! grep -q "^BAD" <<<"$out"; then
  ok "the $n folders recorded with ci/hil-run.sh read as its invocations ($(tail -1 <<<"$out"))"
else
  echo "$out"; bad "a folder recorded with ci/hil-run.sh has an entry that does not read (exit $rc)"
fi
echo "note: $old folders replaced old run*.sh scripts; they are compared with those scripts from git history by hand: python3 ci/hil_run_check.py"

# A made-up repository: the two scripts and one folder.
R=$T/root
mkdir -p "$R/ci" "$R/docs/hil/2099-01-01-h200-made-up" "$R/docs/hil/2099-01-02-h200-no-runs"
cp ci/hil_run_check.py ci/hil-run.sh "$R/ci/"
touch "$R/docs/hil/2099-01-02-h200-no-runs/report.md"
cat > "$R/docs/hil/2099-01-01-h200-made-up/runs.txt" <<'RUNS'
## run1
# a good one
ci/hil-run.sh --bin .carry/x 2099-01-01-h200-made-up 1 --for 'x=a|b' \
  'timeout 60 resmem-gpu bench --sizes 1M --json $OUT/{x}.json > $OUT/{x}.txt'

## run2
# an option ci/hil-run.sh does not have
ci/hil-run.sh --bogus 2099-01-01-h200-made-up 2 'resmem-gpu bench'
RUNS
out=$(python3 "$R/ci/hil_run_check.py" --session 2099-01-01-h200-made-up 2>&1); rc=$?
echo "$out"
grep -q "^ok   2099-01-01-h200-made-up run1: 1 invocation(s) read" <<<"$out" && ok "a good entry reads" || bad "the good entry"
grep -q "^BAD  2099-01-01-h200-made-up run2: ci/hil-run.sh --dry-run failed: hil-run: unknown option --bogus" <<<"$out" &&
  ok "a bad invocation is named with ci/hil-run.sh's reason" || bad "the bad invocation was not named"
[ $rc = 1 ] && grep -q "^1 problem(s) in 2 runs" <<<"$out" && ok "and the check exits 1" || bad "exit $rc"

printf '## run1\n# not an invocation\nbash run1.sh\n' > "$R/docs/hil/2099-01-01-h200-made-up/runs.txt"
out=$(python3 "$R/ci/hil_run_check.py" --session 2099-01-01-h200-made-up --session 2099-01-02-h200-no-runs 2>&1); rc=$?
echo "$out"
grep -q "^BAD  2099-01-01-h200-made-up: .*the entry for run1 is not a ci/hil-run.sh invocation" <<<"$out" &&
  ok "an entry that is not an invocation is named" || bad "the non-invocation was not named"
grep -q "^BAD  2099-01-02-h200-no-runs: .*No such file" <<<"$out" && ok "a folder without runs.txt is named" ||
  bad "the missing runs.txt was not named"
[ $rc = 1 ] && ! grep -q Traceback <<<"$out" && ok "both without a traceback, exit 1" || bad "exit $rc"

finish "hil_run_check_test"
