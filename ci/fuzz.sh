#!/usr/bin/env bash
# Fuzzing with libFuzzer (docs/reliability.md, "Fuzzing"). Bazel builds with gcc, which has no
# libFuzzer, so this script builds the fuzz targets outside Bazel with Debian's clang 14
# (-fsanitize=fuzzer,address,undefined), from the source lists Bazel itself holds (`bazel query`
# of each //PACKAGE:TARGET_fuzz_lib: every target sits beside the parser it fuzzes, found with
# `bazel query 'attr(name, "_fuzz_lib$", //...)'`), and runs each for a bounded time.
#
#   ci/fuzz.sh [--seconds N] [--target NAME]... [--merge] [--seed]
#     --seconds N   fuzz each target N seconds (default 20: the short run; a long run on demand,
#                   e.g. --seconds 3600)
#     --target NAME only this target (repeatable); default: every target
#     --seed        add fresh seeds from the repo's own files (ci/fuzz_seeds.py) to what
#                   --merge minimises
#     --merge       after fuzzing, minimise PACKAGE/fuzz_corpus/NAME with -merge=1 over the
#                   committed corpus, the seeds and what this run found; files named regress-*
#                   (reproducers of fixed findings) are always kept
#
# Each run: -timeout=10 (an input running longer is a hang), -rss_limit_mb=2048 (more is an
# out-of-memory), -malloc_limit_mb=1024, leaks detected. Prints one line per target: seconds,
# executions, corpus files, crashes, timeouts, OOMs, leaks. A finding leaves its reproducer in
# $OUT/artifacts/NAME/ (the line names it; replay it with `$OUT/bin/NAME_fuzz FILE`) and the
# script exits 1. Exit 2: the build failed.
# Build output: ${RESMEM_FUZZ_OUT:-.fuzz} (git-ignored), rebuilt incrementally by make.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
seconds=20
targets=()
merge=0
seed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --merge) merge=1; shift ;;
    --seed) seed=1; merge=1; shift ;;
    -h|--help) sed -n '2,/^# Build output/p' "$0"; exit 0 ;;
    *) echo "ci/fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
out=${RESMEM_FUZZ_OUT:-$repo/.fuzz}
for tool in clang-14 clang++-14 make; do
  command -v $tool >/dev/null || { echo "ci/fuzz.sh: $tool not found (apt-get install clang-14 make)" >&2; exit 2; }
done
# Every fuzz target of the tree, NAME -> its package (the sources' label //PACKAGE:NAME_fuzz_lib,
# the corpus PACKAGE/fuzz_corpus/NAME); the names are unique (the binaries are named by them).
mkdir -p "$out"
# --keep_going: a package that does not load (someone's edit in progress) costs only its own targets.
labels=$(bazel query --keep_going 'attr(name, "_fuzz_lib$", //...)' 2>"$out/query.log")
case $? in
  0) ;;
  3) echo "ci/fuzz.sh: warning: some packages did not load, their fuzz targets are left out: $out/query.log" >&2 ;;
  *) echo "ci/fuzz.sh: bazel query of the fuzz targets failed: $out/query.log" >&2; exit 2 ;;
esac
declare -A package=()
for label in $labels; do
  name=${label##*:}; name=${name%_fuzz_lib}; pkg=${label#//}; pkg=${pkg%%:*}
  [ -z "${package[$name]:-}" ] ||
    { echo "ci/fuzz.sh: fuzz target $name in both //${package[$name]} and //$pkg" >&2; exit 2; }
  package[$name]=$pkg
done
[ ${#package[@]} -gt 0 ] || { echo "ci/fuzz.sh: no fuzz target found in //..." >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(printf '%s\n' "${!package[@]}" | sort)
for t in "${targets[@]}"; do
  [ -n "${package[$t]:-}" ] ||
    { echo "ci/fuzz.sh: no fuzz target $t; there are: $(printf '%s\n' "${!package[@]}" | sort | tr '\n' ' ')" >&2; exit 2; }
done

# ---- build ------------------------------------------------------------------------------------
mkdir -p "$out/obj" "$out/bin"
mk="$out/Makefile"
# -DNDEBUG as Bazel's opt build (.bazelrc compilation_mode=opt): the code is fuzzed as it ships.
# Without it toml++ 3.3's internal assertions (TOML_ASSERT_ASSUME in parser.inl) fire on some
# malformed TOML; in the shipped gcc build they are no-ops and the parse ends in an error
# (docs/reliability.md, "Fuzzing": the reproducers are in the corpus).
cflags="-DNDEBUG -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -I$repo -I$repo/bazel-bin -I$repo/kmod/uapi -MMD -MP"
{
  echo "CC := clang-14"
  echo "CXX := clang++-14"
  echo "CFLAGS := $cflags"
  echo "CXXFLAGS := -std=c++17 $cflags"
  echo "LDFLAGS := -fsanitize=fuzzer,address,undefined"
  echo "all: $(printf "$out/bin/%s_fuzz " "${targets[@]}")"
} > "$mk"
# Objects depend on the flags: a change of them rebuilds everything.
flags_file="$out/flags"
[ "$(cat "$flags_file" 2>/dev/null)" = "$cflags" ] || echo "$cflags" > "$flags_file"
generated=()
declare -A rule_written=()
for t in "${targets[@]}"; do
  label="//${package[$t]}:${t}_fuzz_lib"
  # The project's own sources of the target and everything it depends on (system headers such as
  # toml++ and nlohmann/json are header-only and come from /usr/include).
  srcs=$(bazel query "kind('source file', deps($label))" 2>/dev/null | grep '^//' |
         grep -E '\.(c|cc)$' | sed 's|^//||; s|:|/|; s|^/||')
  gens=$(bazel query "kind('generated file', deps($label))" 2>/dev/null | grep '^//' |
         grep -E '\.(c|cc)$' | sed 's|^//||; s|:|/|; s|^/||')
  [ -n "$srcs" ] || { echo "ci/fuzz.sh: bazel query found no sources for $label" >&2; exit 2; }
  objs=()
  for s in $srcs; do
    objs+=("$out/obj/${s%.*}.o")
    if [ -z "${rule_written[$s]:-}" ]; then
      rule_written[$s]=1
      compiler='$(CXX) $(CXXFLAGS)'; [[ $s == *.c ]] && compiler='$(CC) $(CFLAGS)'
      printf '%s: %s %s\n\t@mkdir -p $(@D)\n\t%s -c $< -o $@\n-include %s\n' \
        "$out/obj/${s%.*}.o" "$repo/$s" "$flags_file" "$compiler" "$out/obj/${s%.*}.d" >> "$mk"
    fi
  done
  for g in $gens; do
    generated+=("//${g%/*}:${g##*/}")
    objs+=("$out/obj/gen/${g%.*}.o")
    if [ -z "${rule_written[gen/$g]:-}" ]; then
      rule_written[gen/$g]=1
      printf '%s: %s %s\n\t@mkdir -p $(@D)\n\t$(CXX) $(CXXFLAGS) -c $< -o $@\n-include %s\n' \
        "$out/obj/gen/${g%.*}.o" "$repo/bazel-bin/$g" "$flags_file" "$out/obj/gen/${g%.*}.d" >> "$mk"
    fi
  done
  printf '%s: %s\n\t$(CXX) $(LDFLAGS) $^ -o $@\n' "$out/bin/${t}_fuzz" "${objs[*]}" >> "$mk"
done
if [ ${#generated[@]} -gt 0 ]; then
  mapfile -t generated < <(printf '%s\n' "${generated[@]}" | sort -u)
  bazel build "${generated[@]}" >/dev/null 2>&1 ||
    { echo "ci/fuzz.sh: bazel build ${generated[*]} failed" >&2; exit 2; }
fi
build_start=$(date +%s)
if ! nice -n 10 make -s -f "$mk" -j2 all; then
  echo "ci/fuzz.sh: the clang build failed" >&2
  exit 2
fi
echo "ci/fuzz.sh: built ${#targets[@]} targets with clang-14 -fsanitize=fuzzer,address,undefined in $(( $(date +%s) - build_start )) s"

# ---- fuzz -------------------------------------------------------------------------------------
if [ "$seed" -eq 1 ]; then
  rm -rf "$out/seeds"
  python3 ci/fuzz_seeds.py "$repo" "$out/seeds"
fi
found=0
printf '%-14s %8s %12s %10s %8s %8s %8s %8s %6s\n' target seconds executions exec/s corpus \
  crashes timeouts ooms leaks
for t in "${targets[@]}"; do
  corpus="${package[$t]}/fuzz_corpus/$t"
  work="$out/work/$t"
  art="$out/artifacts/$t"
  log="$out/logs/$t.log"
  rm -rf "$work" "$art"
  mkdir -p "$work" "$art" "$out/logs" "$corpus"
  # New inputs go to the work folder; the committed corpus is read only (--merge updates it).
  t0=$(date +%s)
  "$out/bin/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$art/" "$work" "$corpus" \
    >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  secs=$(( $(date +%s) - t0 ))
  files=$(( $(ls "$corpus" | wc -l) + $(ls "$work" | wc -l) ))
  crashes=$(ls "$art" | grep -c '^crash-')
  timeouts=$(ls "$art" | grep -c '^timeout-')
  ooms=$(ls "$art" | grep -c '^oom-')
  leaks=$(ls "$art" | grep -c '^leak-')
  printf '%-14s %8s %12s %10s %8s %8s %8s %8s %6s\n' "$t" "${secs:-?}" "${execs:-?}" \
    "${rate:-?}" "$files" "$crashes" "$timeouts" "$ooms" "$leaks"
  if [ $((crashes + timeouts + ooms + leaks)) -gt 0 ] || [ "$rc" -ne 0 ]; then
    found=1
    echo "  FINDING in $t (libFuzzer exit $rc): reproducer(s): $(ls -d "$art"/* 2>/dev/null | tr '\n' ' ')"
    grep -m3 -E 'ERROR: |FUZZ FINDING|runtime error|SUMMARY' "$log" | sed 's/^/    /'
    echo "  replay: $out/bin/${t}_fuzz FILE; full log: $log"
  fi
  if [ "$merge" -eq 1 ]; then
    merged="$out/merged/$t"
    rm -rf "$merged"; mkdir -p "$merged"
    extra=(); [ -d "$out/seeds/$t" ] && extra=("$out/seeds/$t")
    "$out/bin/${t}_fuzz" -merge=1 -timeout=10 -rss_limit_mb=2048 "$merged" "$corpus" \
      "${extra[@]}" "$work" >"$out/logs/$t.merge.log" 2>&1 ||
      { echo "  merge of $t failed: $out/logs/$t.merge.log"; found=1; continue; }
    cp "$corpus"/regress-* "$merged"/ 2>/dev/null || true
    rm -f "$corpus"/*
    cp "$merged"/* "$corpus"/
    echo "  merged: $corpus now holds $(ls "$corpus" | wc -l) files"
  fi
done
if [ "$found" -ne 0 ]; then
  echo "ci/fuzz.sh: findings above: fix the parser, add each reproducer as PACKAGE/fuzz_corpus/TARGET/regress-NAME"
  exit 1
fi
echo "ci/fuzz.sh: ${#targets[@]} targets, ${seconds} s each: 0 crashes, 0 timeouts, 0 OOMs, 0 leaks"
