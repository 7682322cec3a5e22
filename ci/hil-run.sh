#!/usr/bin/env bash
# One device run of docs/hil/: a session's measurement commands, given as arguments, run on the
# GPU machine with the conventions every recorded run used (binaries built on the build machine
# and carried beside the folder, results in $OUT, the whole output in $OUT/run<RUN>.log).
# Each dated folder's runs.txt lists the invocation that reproduces each of its runs (the
# run*.sh scripts they replace are in git history); `ci/hil_run_check.py` proves that every
# invocation runs the same command lines as the script it replaced.
#
# usage: ci/hil-run.sh [OPTIONS] SESSION RUN [--for|--with SPEC]... STEP [...]
#   SESSION   the folder under docs/hil/ (2026-11-28-h200-staged13)
#   RUN       the run's name in that folder (1, 14-rerun)
# options:
#   --bin DIR   the carried binaries (default docs/hil/SESSION; docs/hil/perf, .carry/perf)
#   --lib DIR   LD_LIBRARY_PATH for them (default: unset)
#   --log NAME  the log under $OUT (default run<RUN>.log); none: no log
#   --out DIR   where results go (default $OUT, the device tool's output folder)
#   --dry-run   print each command line, one a line, and run nothing (no $OUT needed)
# STEP: one argument, a command line
#     [NAME=VALUE]... [timeout SECONDS] PROGRAM [ARG]... [> FILE | => FILE]
#   PROGRAM   a carried binary's name (run from --bin); a path with a slash, from the repo root
#             (ci/hil-nightly.sh); @NAME, a program on PATH (@tar); or `set FILE VALUE`, which
#             writes VALUE into a /proc/sys or /sys file (vm.nr_hugepages)
#   > FILE    the command's output goes to FILE (its stderr to the log); => FILE: to FILE and
#             to the log
#   $OUT, $BIN, $RUN  the output folder, the binaries' folder (absolute), the run's name
#   {NAME}    a loop variable. Words are split on blanks (no quoting: no value has a blank).
# Loops, given before a STEP, apply to that step:
#   --for 'NAME=V1|V2|...'   one pass per value; several --for nest, the first outermost
#   --with 'NAME=V1|V2|...'  takes its values in step with the --for before it (as many values)
#
# Every run starts with the machine's facts (GPU, driver, link, clocks, CPU, memory, pages) and
# prints, for each command, `== [i/n] COMMAND` before it and its exit status, seconds and CPU
# time stolen by the hypervisor after it. A failing command does not stop the run (as in the
# recorded runs); the exit status is 1 when any failed.
set -u
shopt -u patsub_replacement 2>/dev/null  # bash 5.2: '&' in a loop value stays '&'

die() { echo "hil-run: $*" >&2; exit 2; }

BIN="" LIB="" LOG="" DRY=0 OUTDIR="${OUT:-}"
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --lib) LIB=$2; shift 2 ;;
    --log) LOG=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --*) die "unknown option $1 (--help lists them)" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || die "usage: ci/hil-run.sh [OPTIONS] SESSION RUN STEP... (--help)"
SESSION=$1 RUN=$2
shift 2
[ -n "$BIN" ] || BIN=docs/hil/$SESSION
[ -n "$LOG" ] || LOG=run$RUN.log

# The words of one command after substitution; sets CMD_ENV, CMD_TIMEOUT, CMD_PROG, CMD_ARGS,
# CMD_REDIR ('>' or '=>') and CMD_FILE.
parse_command() {
  local -a w
  read -ra w <<<"$1"
  CMD_ENV=() CMD_TIMEOUT="" CMD_PROG="" CMD_ARGS=() CMD_REDIR="" CMD_FILE=""
  local i=0 n=${#w[@]}
  while [ $i -lt $n ] && [[ ${w[i]} =~ ^[A-Z][A-Z0-9_]*= ]]; do CMD_ENV+=("${w[i]}"); i=$((i + 1)); done
  if [ $i -lt $n ] && [ "${w[i]}" = timeout ]; then CMD_TIMEOUT=${w[i + 1]:-}; i=$((i + 2)); fi
  [ $i -lt $n ] || die "no program in step '$1'"
  CMD_PROG=${w[i]}; i=$((i + 1))
  while [ $i -lt $n ]; do
    case ${w[i]} in
      '>'|'=>') CMD_REDIR=${w[i]}; CMD_FILE=${w[i + 1]:-}; [ -n "$CMD_FILE" ] || die "no file after ${w[i]} in '$1'"
                [ $((i + 2)) -eq $n ] || die "words after the output file in '$1'"; break ;;
      *) CMD_ARGS+=("${w[i]}") ;;
    esac
    i=$((i + 1))
  done
}

# A program's path as it runs (from the repo root), or "tar" for @tar.
program_path() {
  case $1 in
    @*) echo "${1#@}" ;;
    */*) echo "$1" ;;
    *) echo "$BIN/$1" ;;
  esac
}

# How --dry-run prints a word: as it is when it needs no quotes.
quote() {
  if [[ -n $1 && $1 =~ ^[][A-Za-z0-9_./:=,+@%^*{}\$-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}

# Expands the loops over one step: appends each resulting command line to COMMANDS.
COMMANDS=()
declare -A VAL
expand() {  # expand LEVEL TEMPLATE
  local level=$1 template=$2
  if [ "$level" -ge "${#LOOP_NAMES[@]}" ]; then
    local line=$template name
    for name in "${!VAL[@]}"; do line=${line//\{$name\}/${VAL[$name]}}; done
    [[ $line == *'{'*'}'* ]] && die "unknown loop variable in '$line'"
    COMMANDS+=("$line")
    return
  fi
  local -a names values
  IFS=' ' read -ra names <<<"${LOOP_NAMES[level]}"
  local count=${LOOP_COUNTS[level]} k j
  for ((k = 0; k < count; k++)); do
    for ((j = 0; j < ${#names[@]}; j++)); do
      IFS='|' read -ra values <<<"${LOOP_VALUES[level * 8 + j]}|"
      VAL[${names[j]}]=${values[k]}
    done
    expand $((level + 1)) "$template"
  done
}

LOOP_NAMES=() LOOP_COUNTS=() LOOP_VALUES=()
add_loop() {  # add_loop for|with SPEC
  local spec=$2 name values count
  [[ $spec == *=* ]] || die "--$1 wants NAME=V1|V2|..., not '$spec'"
  name=${spec%%=*} values=${spec#*=}
  [[ $name =~ ^[a-z][a-z0-9_]*$ ]] || die "loop variable '$name': lower case letters, digits, _"
  local -a parts
  IFS='|' read -ra parts <<<"$values|"
  count=${#parts[@]}
  if [ "$1" = for ]; then
    LOOP_NAMES+=("$name") LOOP_COUNTS+=("$count")
    LOOP_VALUES[$(((${#LOOP_NAMES[@]} - 1) * 8))]=$values
  else
    local level=$((${#LOOP_NAMES[@]} - 1)) have
    [ $level -ge 0 ] || die "--with $spec: no --for before it"
    [ "$count" = "${LOOP_COUNTS[level]}" ] || die "--with $spec: $count values, its --for has ${LOOP_COUNTS[level]}"
    have=$(wc -w <<<"${LOOP_NAMES[level]}")
    [ "$have" -lt 8 ] || die "--with $spec: at most 7 with one --for"
    LOOP_NAMES[level]+=" $name"
    LOOP_VALUES[$((level * 8 + have))]=$values
  fi
}

while [ $# -gt 0 ]; do
  case $1 in
    --for|--with) [ $# -ge 2 ] || die "$1 wants a value"; add_loop "${1#--}" "$2"; shift 2 ;;
    *) VAL=(); expand 0 "$1"; LOOP_NAMES=() LOOP_COUNTS=() LOOP_VALUES=(); shift ;;
  esac
done
[ ${#LOOP_NAMES[@]} -eq 0 ] || die "a --for or --with with no step after it"
[ ${#COMMANDS[@]} -gt 0 ] || die "no step given"

BIN_ABS=$(realpath -m "$BIN")
if [ "$DRY" = 1 ]; then
  for c in "${COMMANDS[@]}"; do
    c=${c//\$BIN/$BIN} c=${c//\$RUN/$RUN}
    parse_command "$c"
    if [ "$CMD_PROG" = set ]; then echo "set ${CMD_ARGS[*]}"; continue; fi
    env=("${CMD_ENV[@]}")
    [ -n "$LIB" ] && env+=("LD_LIBRARY_PATH=$LIB")
    line=""
    if [ ${#env[@]} -gt 0 ]; then
      while IFS= read -r e; do line+="$(quote "$e") "; done < <(printf '%s\n' "${env[@]}" | LC_ALL=C sort -t= -k1,1)
    fi
    [ -n "$CMD_TIMEOUT" ] && line+="timeout $CMD_TIMEOUT "
    line+=$(program_path "$CMD_PROG")
    for a in "${CMD_ARGS[@]}"; do line+=" $(quote "$a")"; done
    [ -n "$CMD_REDIR" ] && line+=" $CMD_REDIR $CMD_FILE"
    printf '%s\n' "$line"
  done
  exit 0
fi

[ -n "$OUTDIR" ] || die "no output folder: set \$OUT or give --out DIR"
mkdir -p "$OUTDIR" || die "cannot make $OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
if [ "$LOG" != none ]; then exec > >(tee "$OUTDIR/$LOG") 2>&1; fi
[ -n "$LIB" ] && export LD_LIBRARY_PATH=$LIB

steal() { awk '/^cpu /{print $9}' /proc/stat 2>/dev/null || echo 0; }  # USER_HZ ticks, all CPUs
facts() {
  echo "== hil-run $SESSION run $RUN: $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1
  echo "kernel $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "CPU flags: $(grep -m1 -o -w -E 'cldemote|movdir64b|avx512f|clwb|fsrm|erms' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  lscpu 2>/dev/null | grep -E 'L1d|L2|L3|NUMA node\(s\)|Thread|Core|Socket' | sed 's/  */ /g'
  grep -E 'MemTotal|MemFree|Hugepagesize' /proc/meminfo | tr -s ' ' | tr '\n' ' '; echo
  echo "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null), shmem $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null); nr_hugepages $(cat /proc/sys/vm/nr_hugepages 2>/dev/null)"
}
facts

n=${#COMMANDS[@]} i=0 failed=0
for c in "${COMMANDS[@]}"; do
  i=$((i + 1))
  c=${c//\$OUT/$OUTDIR} c=${c//\$BIN/$BIN_ABS} c=${c//\$RUN/$RUN}
  parse_command "$c"
  echo "== [$i/$n] $c"
  if [ "$CMD_PROG" = set ]; then
    [ ${#CMD_ARGS[@]} -eq 2 ] && [[ ${CMD_ARGS[0]} == /proc/sys/* || ${CMD_ARGS[0]} == /sys/* ]] ||
      { echo "-- set wants a /proc/sys or /sys file and a value"; failed=$((failed + 1)); continue; }
    # HIL_RUN_SYSFS_ROOT: a folder standing in for / (ci/hil_run_check.py runs this script on a
    # shared build machine, whose pages are not ours to change).
    file=${HIL_RUN_SYSFS_ROOT:-}${CMD_ARGS[0]}
    echo "${CMD_ARGS[1]}" > "$file"; rc=$?
    echo "-- rc=$rc; ${CMD_ARGS[0]} now $(cat "$file" 2>/dev/null)"
    [ $rc = 0 ] || failed=$((failed + 1))
    continue
  fi
  argv=()
  [ ${#CMD_ENV[@]} -gt 0 ] && argv+=(env "${CMD_ENV[@]}")
  [ -n "$CMD_TIMEOUT" ] && argv+=(timeout "$CMD_TIMEOUT")
  argv+=("$(program_path "$CMD_PROG")" "${CMD_ARGS[@]}")
  s0=$(steal) t0=$(date +%s.%N)
  case $CMD_REDIR in
    '>') "${argv[@]}" > "$CMD_FILE" ;;
    '=>') "${argv[@]}" 2>&1 | tee "$CMD_FILE"; (exit "${PIPESTATUS[0]}") ;;
    *) "${argv[@]}" 2>&1 ;;
  esac
  rc=$?
  s1=$(steal) t1=$(date +%s.%N)
  awk -v rc=$rc -v a="$s0" -v b="$s1" -v t="$t0" -v u="$t1" \
    'BEGIN { printf "-- rc=%d in %.1f s, %.2f s of CPU stolen\n", rc, u - t, (b - a) / 100 }'
  [ $rc = 0 ] || failed=$((failed + 1))
done
echo "== hil-run $SESSION run $RUN: $n commands, $failed failed; $(date -u)"
[ $failed = 0 ]
