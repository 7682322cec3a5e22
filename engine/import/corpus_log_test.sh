#!/bin/bash
# One corpus log as a test (mock/machine/corpus/README.md): import the log's firmware map and
# command line with `resmem import`, run the scenario on the simulator, and require the printed
# user-defined map to equal the logged one line for line.
#
# usage: corpus_log_test.sh RESMEM LOG [NOT_MODELLED_REASON]
# With a reason (mock/machine/corpus/NOT_MODELLED.tsv) the simulator is known not to
# reproduce this log: the test passes only while the printed map still differs, and prints the
# reason and the difference.
# The log's machine-readable header lines give what the log itself lacks:
#   # cmdline: TEXT   -> --cmdline TEXT   (the options as the source's text names them)
#   # version: X.Y.Z  -> --kernel X.Y.Z   (no "Linux version" line in the log)
#   # arch: i386      -> --arch i386      (nothing in the log shows a 32-bit kernel)
set -u
resmem=$1
log=$2
not_modelled=${3:-}
name=$(basename "$log" .log)
work=${TEST_TMPDIR:-$(mktemp -d)}/corpus
mkdir -p "$work"

header() { sed -n "s/^# $1: //p" "$log" | head -n 1; }
has_header() { grep -q "^# $1: " "$log"; }

args=()
has_header cmdline && args+=(--cmdline "$(header cmdline)")
has_header version && args+=(--kernel "$(header version)")
has_header arch && args+=(--arch "$(header arch)")

echo "corpus log $name"
[ ${#args[@]} -gt 0 ] && printf '  given from the header: %s\n' "${args[*]}"
if ! "$resmem" import "$log" "${args[@]}" -o "$work/scenario.toml" --report "$work/import.txt" \
    2>"$work/import.err"; then
  echo "FAIL $name: resmem import failed"
  cat "$work/import.err" "$work/import.txt"
  exit 1
fi
if ! grep -q '^expect.user_map = \[' "$work/scenario.toml"; then
  echo "FAIL $name: the import found no logged user map to compare with"
  cat "$work/import.txt"
  exit 1
fi

"$resmem" run "$work/scenario.toml" >"$work/run.txt" 2>&1
rc=$?

# The logged map (the scenario's expectation) and the printed one, for the diff.
sed -n '/^expect.user_map = \[/,/^\]/p' "$work/scenario.toml" | sed -n 's/^  "\(.*\)",$/\1/p' \
  >"$work/logged.txt"
sed -n 's/^   dmesg: *\(user: .*\)$/\1/p' "$work/run.txt" >"$work/printed.txt"

if [ -n "$not_modelled" ]; then
  if [ $rc -eq 0 ]; then
    echo "FAIL $name: listed as not modelled, but the simulator now prints the logged map:"
    echo "  remove it from mock/machine/corpus/NOT_MODELLED.tsv"
    exit 1
  fi
  echo "NOT MODELLED $name: $not_modelled"
  echo "  the simulator's user map still differs from the log, as expected:"
  diff -u --label logged --label simulator "$work/logged.txt" "$work/printed.txt" | sed 's/^/  /'
  exit 0
fi

if [ $rc -ne 0 ]; then
  echo "FAIL $name: resmem run exit $rc; the user map, logged vs simulated:"
  diff -u --label logged --label simulator "$work/logged.txt" "$work/printed.txt"
  echo "--- resmem run output"
  cat "$work/run.txt"
  echo "--- import report"
  cat "$work/import.txt"
  exit 1
fi
echo "PASS $name: $(wc -l <"$work/logged.txt") user: lines equal to the log"
exit 0
