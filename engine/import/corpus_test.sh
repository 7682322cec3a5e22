#!/bin/bash
# The corpus of real boot logs as one test (mock/machine/corpus/README.md): every log imported
# with `resmem import` and run on the simulator, its printed user-defined map equal to the
# logged one line for line (corpus_log_test.sh does one log). Each log is a testcase of its own
# in the JUnit XML, named after the file, so the summary lists every log; the logs of
# NOT_MODELLED.tsv pass only while they still differ, and say so by name.
#
# usage: corpus_test.sh RESMEM ONE_LOG_SCRIPT CORPUS_DIR
set -u
resmem=$1
one=$2
dir=$3
xml=${XML_OUTPUT_FILE:-}
pass=0 fail=0 not_modelled=0
cases=""
esc() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'; }
for log in "$dir"/*.log; do
  name=$(basename "$log" .log)
  reason=$(awk -F'\t' -v f="$name.log" '$1 == f { print $2 }' "$dir/NOT_MODELLED.tsv")
  out=$("$one" "$resmem" "$log" ${reason:+"$reason"} 2>&1)
  rc=$?
  echo "$out"
  if [[ $rc == 0 ]]; then
    if [[ -n "$reason" ]]; then not_modelled=$((not_modelled + 1)); else pass=$((pass + 1)); fi
    cases+="<testcase classname=\"corpus\" name=\"$name$([[ -n $reason ]] && echo _NOT_MODELLED)\"/>"
  else
    fail=$((fail + 1))
    cases+="<testcase classname=\"corpus\" name=\"$name\"><failure message=\"the user map differs from the log\">$(printf '%s' "$out" | tail -40 | esc)</failure></testcase>"
  fi
done
total=$((pass + fail + not_modelled))
echo "corpus: $total logs: $pass reproduced line for line, $not_modelled not modelled (named above, with the reason), $fail failed"
if [[ -n "$xml" ]]; then
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="corpus" tests="%d" failures="%d">%s</testsuite></testsuites>\n' \
    "$total" "$fail" "$cases" >"$xml"
fi
[[ $total -ge 20 ]] || { echo "FAIL: only $total logs found in $dir"; exit 1; }
[[ $fail == 0 ]]
