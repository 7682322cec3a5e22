#!/usr/bin/env bash
# Bazel test wrapper: runs one scenario file, or a folder, and passes when resmem says every case
# held. args: RESMEM FILE|DIR BACKEND
# A folder's files are dealt round-robin (in sorted order) to one `resmem run` per core, at most
# four (RESMEM_SCENARIO_PARTS sets the count), run side by side: each process runs whole files
# with its own backend parts (the FUSE backend mounts its own device), so the verdicts are those
# of one run of the folder. Their output follows in part order; the exit is the worst of theirs:
# a crash over 2 (bad input) over 1 (a case failed) over 3 (the backend unavailable) over 0. On
# the 2-core build machine the FUSE folder, alone at the end of an incremental `bazel test
# //...`, took 8-9 s on one core and 5.5 s in two parts (docs/build.md "Incremental").
# ci/run_scenario_test_test.sh checks the parts and the exit.
set -u
resmem=$1 path=$2 backend=$3
verdict() {  # verdict RC: the wrapper's line for resmem's exit code RC; returns RC
  case $1 in
    0) echo "scenario $path: every case as expected" ;;
    3) echo "scenario $path: backend $backend unavailable here (see above)" ;;
    *) echo "scenario $path: FAILED (exit $1)" ;;
  esac
  return "$1"
}
if [[ ! -d $path ]]; then
  "$resmem" run "$path" --backend "$backend" --verbose
  verdict $?
  exit
fi
# The files `resmem run DIR` takes (engine/scenario CollectScenarioFiles): every regular file, or
# link to one (Bazel's runfiles are links), named *.toml under DIR, in byte order.
mapfile -t files < <(find "$path" -name '*.toml' -xtype f | LC_ALL=C sort)
((${#files[@]})) || { echo "scenario $path: no *.toml under it"; exit 2; }
parts=${RESMEM_SCENARIO_PARTS:-$(nproc 2>/dev/null || echo 1)}
((parts > 4)) && parts=4
((parts > ${#files[@]})) && parts=${#files[@]}
out=${TEST_TMPDIR:-$(mktemp -d)}
pids=() counts=()
for ((p = 0; p < parts; p++)); do
  mine=()
  for ((i = p; i < ${#files[@]}; i += parts)); do mine+=("${files[i]}"); done
  "$resmem" run "${mine[@]}" --backend "$backend" --verbose > "$out/part$p.log" 2>&1 &
  pids+=($!) counts+=(${#mine[@]})
done
# severity RC: 0 (every case held) < 3 (unavailable) < 1 (failed) < 2 (bad input) < other (a crash)
severity() {
  case $1 in 0) echo 0 ;; 3) echo 1 ;; 1) echo 2 ;; 2) echo 3 ;; *) echo 4 ;; esac
}
worst=0
for ((p = 0; p < parts; p++)); do
  wait "${pids[p]}"
  rc=$?
  echo "=== part $((p + 1)) of $parts: ${counts[p]} files, exit $rc"
  cat "$out/part$p.log"
  (($(severity "$rc") > $(severity "$worst"))) && worst=$rc
done
echo "scenario $path: ${#files[@]} files in $parts parts"
verdict $worst
