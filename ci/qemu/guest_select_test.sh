#!/usr/bin/env bash
# The guest's case selection (ci/qemu/guest_init.sh), on the host, with the guest's own shell
# (busybox sh) and the function text of guest_init.sh itself, no QEMU:
#  1. matches: comma-separated shell patterns, empty items ignored, whole names only;
#  2. selected: resmem_only (when given) and not resmem_skip (when given);
#  3. wanted GROUP: true when a case of GROUP is selected, false when none is; it runs none of
#     the group's commands and numbers no case; after it, tap runs and numbers cases again;
#  4. access_cases, which decides whether a boot starts udevd: wanted by the driver part (every
#     case but kmod_lane.sh's ENGINE_CASES) and by a plain run, not by the engine part (only
#     ENGINE_CASES) nor by a boot that skips the access_* cases.
# Usage: guest_select_test.sh GUEST_INIT_SH KMOD_LANE_SH
set -u
init=$1 lane=$2
source ci/checks.sh
T=${TEST_TMPDIR:-$(mktemp -d)}
BB=$(command -v busybox) || { echo "FAIL busybox not installed: run ci/setup.sh (it installs busybox-static)"; exit 1; }

# The definitions of the named functions as guest_init.sh has them: a one-line 'f() { ...; }' or
# 'f() {' through the first line that is '}'.
extract() {
  local f
  for f in "$@"; do
    awk -v f="$f" '
      $0 ~ "^" f "\\(\\) *\\{" { on = 1 }
      on { print }
      on && ($0 ~ /^}/ || ($0 ~ "^" f "\\(\\) *\\{" && $0 ~ /}[[:space:]]*(#.*)?$/)) { exit }
    ' "$init"
  done
}
extract matches selected tap run_rc t wanted access_cases > "$T/funcs.sh"
for f in matches selected tap run_rc t wanted access_cases; do
  if grep -q "^$f() *{" "$T/funcs.sh"; then ok "guest_init.sh defines $f"; else bad "guest_init.sh no longer defines $f (the test reads it by that name)"; fi
done
ENGINE_CASES=$(sed -n "s/^ENGINE_CASES='\(.*\)'$/\1/p" "$lane")
if [ -n "$ENGINE_CASES" ]; then ok "kmod_lane.sh's ENGINE_CASES read: $ENGINE_CASES"; else bad "ENGINE_CASES not found in $lane"; fi

# guest SNIPPET: runs the snippet in busybox sh after the extracted functions, with the guest's
# globals; resmem_only and resmem_skip come from the caller's environment.
guest() {
  ( cd "$T" && resmem_only=${ONLY:-} resmem_skip=${SKIP:-} "$BB" sh -c "
    N=0 FAILED=0 DRY= G=true resmem_kcheck= UDEVD=no
    $(cat "$T/funcs.sh")
    $1" 2>&1 )
}

# 1. matches
out=$(guest '
  for n in edu_dma p2p_unload p2p_unload_more x_edu_dma card_a; do
    matches "edu_*,,p2p_unload" $n && echo "$n yes" || echo "$n no"
  done')
want=$'edu_dma yes\np2p_unload yes\np2p_unload_more no\nx_edu_dma no\ncard_a no'
if [ "$out" = "$want" ]; then ok "matches: patterns whole-name, empty items ignored"; else bad "matches gave: $out"; fi

# 2. selected
sel() { ONLY=$1 SKIP=$2 guest "selected $3 && echo yes || echo no"; }
[ "$(sel '' '' any)" = yes ] && ok "selected: no lists, every case" || bad "selected with no lists"
[ "$(sel 'card_*' '' card_x)" = yes ] && [ "$(sel 'card_*' '' edu_x)" = no ] && ok "selected: resmem_only names the cases" || bad "selected with resmem_only"
[ "$(sel '' 'card_*' card_x)" = no ] && [ "$(sel '' 'card_*' edu_x)" = yes ] && ok "selected: resmem_skip leaves cases out" || bad "selected with resmem_skip"
[ "$(sel 'card_*' 'card_b' card_b)" = no ] && [ "$(sel 'card_*' 'card_b' card_a)" = yes ] && ok "selected: skip wins over only" || bad "selected with both lists"

# 3. wanted: a group whose commands leave a mark when they run.
group='grp() { t grp_one touch ran_one; t grp_two touch ran_two; }'
rm -f "$T"/ran_*
out=$(ONLY='grp_two' guest "$group
  wanted grp && echo wanted || echo unwanted
  echo N=\$N DRY=[\$DRY]")
if [ "$out" = $'wanted\nN=0 DRY=[]' ] && ! ls "$T"/ran_* >/dev/null 2>&1; then
  ok "wanted: a group with one case selected is wanted, and nothing of it ran or was numbered"
else
  bad "wanted with grp_two selected: '$out', marks: $(ls "$T" | grep ran_ | tr '\n' ' ')"
fi
out=$(ONLY='other_*' guest "$group
  wanted grp && echo wanted || echo unwanted")
[ "$out" = unwanted ] && ok "wanted: a group with no case selected is not wanted" || bad "wanted with nothing selected: '$out'"
out=$(ONLY='grp_two' guest "$group
  wanted grp; grp")
if grep -q '^ok 1 - grp_two$' <<<"$out" && [ -e "$T/ran_two" ] && [ ! -e "$T/ran_one" ]; then
  ok "after wanted, the group runs its selected case for real, numbered 1"
else
  bad "the group after wanted: '$out'"
fi

# 4. access_cases: whether a boot starts udevd.
acc() { ONLY=$1 SKIP=$2 guest "wanted access_cases && echo wanted || echo unwanted"; }
[ "$(acc '' '')" = wanted ] && ok "access_cases wanted by a run of every case" || bad "access_cases in a full run"
[ "$(acc '' "$ENGINE_CASES")" = wanted ] && ok "access_cases wanted by the driver part (udevd starts there)" || bad "access_cases not wanted by the driver part"
[ "$(acc "$ENGINE_CASES" '')" = unwanted ] && ok "access_cases not wanted by the engine part (no udevd)" || bad "access_cases wanted by the engine part"
[ "$(acc '' 'access_*')" = unwanted ] && ok "access_cases not wanted when the access cases are skipped" || bad "access_cases wanted with access_* skipped"

finish guest_select_test
