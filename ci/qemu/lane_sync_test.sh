#!/usr/bin/env bash
# ci/qemu/lane_sync.sh, the kernel lane's rule for starting its later boots beside its first,
# against stand-in boots (a background sleep) and consoles written by the test:
#   1. a lane alone starts them once its console has the point's line, not before, and once;
#   2. a first boot that ends before that line: nothing started, the caller's turn (returns 1);
#   3. two lanes of a pair: the lane that got there first waits for the other's mark;
#   4. a lane whose first boot ended without the line marks after it, and the other goes on;
#   5. the pattern is grep's: a line holding it elsewhere than at its start does not count;
#   6. a sync folder that does not exist: the lane behaves as a lane alone.
# Usage: lane_sync_test.sh (in Bazel: the files are in the runfiles).
set -u
if [[ -n "${TEST_SRCDIR:-}" ]]; then SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"; else SRC="$(cd "$(dirname "$0")/../.." && pwd)"; fi
T=${TEST_TMPDIR:-$(mktemp -d)}
source "$SRC/ci/checks.sh"
source "$SRC/ci/qemu/lane_sync.sh"
export RESMEM_LANE_POLL=0.05
MARK='^# case scenario_seed003_'
now() { date +%s.%N; }
# started: the stand-in for start_extra_boots: records when, in $STARTS.
started() { echo "$LANE_NAME $(now)" >>"$STARTS"; }
# later SECONDS LINE FILE: appends LINE to FILE after SECONDS, in the background; FILE.when says
# when (just before the line).
later() { (sleep "$1"; now >"$3.when"; echo "$2" >>"$3") & }
# earlier A B: time A is before time B.
earlier() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$1" "$2"; }

# 1. alone
STARTS=$T/1.starts LANE_NAME=alone
unset RESMEM_LANE_SYNC RESMEM_LANE_COUNT
: >"$T/1.console"
sleep 5 & boot=$!
later 0.5 "# case scenario_seed003_gpudirect: run_rc ..." "$T/1.console"
beside_first_boot "$boot" "$T/1.console" "$MARK" started
rc=$?
kill "$boot" 2>/dev/null; wait "$boot" 2>/dev/null
if ((rc == 0)) && [[ $(wc -l <"$STARTS") == 1 ]]; then ok "alone: started once, returned 0"; else bad "alone: returned $rc, started $(wc -l <"$STARTS" 2>/dev/null) times (want 0, 1)"; fi
if earlier "$(cat "$T/1.console.when")" "$(awk '{print $2}' "$STARTS")"; then ok "alone: not before the console's line"; else bad "alone: started before the line was written"; fi

# 2. the boot ends first
STARTS=$T/2.starts LANE_NAME=alone
: >"$T/2.console" && : >"$STARTS"
echo "# case p2p_pin: run_rc ..." >"$T/2.console"
sleep 0.3 & boot=$!
beside_first_boot "$boot" "$T/2.console" "$MARK" started
rc=$?
if ((rc == 1)) && [[ ! -s $STARTS ]]; then ok "a boot that ends before the line: returns 1, nothing started"; else bad "a boot that ends before the line: returned $rc, started $(wc -l <"$STARTS") times (want 1, 0)"; fi

# pair N B_BOOT B_MARK: two lanes of a pair (case N's files): lane a's console has the line from
# the start, lane b's first boot runs B_BOOT seconds and gets the line after B_MARK seconds (never
# when B_MARK is -); lane b marks after its boot as kmod_lane.sh does (lane_reached after the wait).
# Each lane's return code in $T/N.rc, the starts in $STARTS, the time of b's line in T_B.
pair() {
  local n=$1 b_boot=$2 b_mark=$3 boot_a boot_b lane_a lane_b
  S=$T/$n.sync STARTS=$T/$n.starts T_B=
  mkdir -p "$S" && : >"$STARTS"
  export RESMEM_LANE_SYNC=$S RESMEM_LANE_COUNT=2
  echo "# case scenario_seed003_a: ..." >"$T/${n}a.console"
  : >"$T/${n}b.console"
  sleep 6 & boot_a=$!
  sleep "$b_boot" & boot_b=$!
  (LANE_NAME=a; beside_first_boot "$boot_a" "$T/${n}a.console" "$MARK" started; echo "a $?" >>"$T/$n.rc") &
  lane_a=$!
  (LANE_NAME=b; beside_first_boot "$boot_b" "$T/${n}b.console" "$MARK" started; echo "b $?" >>"$T/$n.rc"; lane_reached) &
  lane_b=$!
  if [[ $b_mark != - ]]; then
    sleep "$b_mark"
    T_B=$(now)
    echo "# case scenario_seed003_b: ..." >>"$T/${n}b.console"
  fi
  wait "$lane_a" "$lane_b"
  kill "$boot_a" "$boot_b" 2>/dev/null
  wait "$boot_a" "$boot_b" 2>/dev/null
}

# 3. a pair: lane a reaches the point at once, lane b 1 s later
pair 3 6 1
if [[ -f $S/a && -f $S/b ]]; then ok "a pair: each lane marked the sync folder"; else bad "a pair: marks in the sync folder: $(ls "$S" | tr '\n' ' ')"; fi
if grep -q '^a 0$' "$T/3.rc" && grep -q '^b 0$' "$T/3.rc" && [[ $(wc -l <"$STARTS") == 2 ]]; then ok "a pair: both started, once each"; else bad "a pair: $(tr '\n' ' ' <"$T/3.rc"); starts: $(tr '\n' ' ' <"$STARTS")"; fi
t_a=$(awk '$1 == "a" {print $2}' "$STARTS")
if [[ -n $t_a ]] && earlier "$T_B" "$t_a"; then ok "a pair: the first lane waited for the other's mark"; else bad "a pair: lane a started at ${t_a:-never}, before lane b's mark at $T_B"; fi

# 4. lane b's first boot ends without the line: it marks after, and lane a goes on
pair 4 0.5 -
if grep -q '^a 0$' "$T/4.rc" && grep -q '^b 1$' "$T/4.rc" && [[ $(awk '{print $1}' "$STARTS") == a ]]; then
  ok "a lane whose boot ended without the line marks after it; the other starts beside its own"
else
  bad "a lane ended early: $(tr '\n' ' ' <"$T/4.rc"); starts: $(tr '\n' ' ' <"$STARTS")"
fi

# 5. the pattern holds only at a line's start
S=$T/5.sync STARTS=$T/5.starts
unset RESMEM_LANE_SYNC RESMEM_LANE_COUNT
: >"$STARTS"
LANE_NAME=alone
echo "kmod-lane: the next is # case scenario_seed003_x" >"$T/5.console"
sleep 0.5 & boot=$!
beside_first_boot "$boot" "$T/5.console" "$MARK" started
rc=$?
if ((rc == 1)) && [[ ! -s $STARTS ]]; then ok "the point's text inside another line does not count"; else bad "a line holding the text elsewhere counted (returned $rc)"; fi

# 6. a sync folder that does not exist
STARTS=$T/6.starts
: >"$STARTS"
export RESMEM_LANE_SYNC=$T/6.none RESMEM_LANE_COUNT=2
echo "# case scenario_seed003_a: ..." >"$T/6.console"
sleep 3 & boot=$!
beside_first_boot "$boot" "$T/6.console" "$MARK" started
rc=$?
kill "$boot" 2>/dev/null; wait "$boot" 2>/dev/null
if ((rc == 0)) && [[ $(wc -l <"$STARTS") == 1 && ! -e $T/6.none ]]; then ok "no sync folder: as a lane alone, and none is made"; else bad "no sync folder: returned $rc, started $(wc -l <"$STARTS") times"; fi

finish lane_sync_test
