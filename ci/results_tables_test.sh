#!/usr/bin/env bash
# docs/results.md's generated sections must be current: `python3 ci/results_tables.py --check`
# fails, with a diff, when the JSON under docs/hil/ says otherwise (run the script to rewrite
# them). Then the script's promises, on a copy of the page: a stale section fails the check, a
# rewrite makes the page current, a second rewrite changes nothing, and a marker that names no
# section, or a section without its markers, is refused.
set -u
T=${TEST_TMPDIR:-$(mktemp -d)}
source ci/checks.sh

if python3 ci/results_tables.py --root . --check > "$T/check.log" 2>&1; then
  ok "docs/results.md is current"
else
  cat "$T/check.log"
  bad "docs/results.md is stale: run python3 ci/results_tables.py and commit the page"
fi

page=$T/page.md
cp -L docs/results.md "$page"
chmod u+w "$page"
# a stale page: one generated row gone
sed -i '/<!-- results:begin nvbandwidth -->/,/<!-- results:end nvbandwidth -->/{/nvbw-256-after.json/d}' "$page"
if python3 ci/results_tables.py --root . --page "$page" --check > "$T/stale.log" 2>&1; then
  bad "a page missing a generated row passed --check"
elif grep -q 'is stale' "$T/stale.log" && grep -q '^+| .*nvbw-256-after.json' "$T/stale.log"; then
  ok "a stale page fails --check, and the diff shows the missing row"
else
  cat "$T/stale.log"; bad "--check failed without naming the page stale and showing the row"
fi
python3 ci/results_tables.py --root . --page "$page" > /dev/null && cmp -s "$page" docs/results.md &&
  ok "a rewrite makes the page what is committed" || bad "a rewrite does not give the committed page"
cp "$page" "$T/once.md"
python3 ci/results_tables.py --root . --page "$page" | grep -q 'nothing to change' && cmp -s "$page" "$T/once.md" &&
  ok "a second rewrite changes nothing" || bad "a second rewrite changed the page"
# hand-written text outside the markers stays as it is
printf '\nA line by hand.\n' >> "$page"
python3 ci/results_tables.py --root . --page "$page" > /dev/null && tail -1 "$page" | grep -qx 'A line by hand.' &&
  ok "text outside the markers is left alone" || bad "text outside the markers changed"
printf '<!-- results:begin no-such-table -->\n<!-- results:end no-such-table -->\n' >> "$page"
if python3 ci/results_tables.py --root . --page "$page" > "$T/unknown.log" 2>&1; then
  bad "a marker for no section was accepted"
else
  grep -q 'no section no-such-table' "$T/unknown.log" && ok "a marker for no section is refused" ||
    { cat "$T/unknown.log"; bad "the refusal does not name the section"; }
fi
sed '/<!-- results:\(begin\|end\) streams -->/d' docs/results.md > "$T/nostreams.md"
if python3 ci/results_tables.py --root . --page "$T/nostreams.md" > "$T/missing.log" 2>&1; then
  bad "a page without a section's markers was accepted"
else
  grep -q 'no markers for streams' "$T/missing.log" && ok "a section without its markers is refused" ||
    { cat "$T/missing.log"; bad "the refusal does not name the section"; }
fi
finish "results_tables_test"
