#!/usr/bin/env bash
# boot() of ci/qemu/boot.sh against a stand-in qemu-system-x86_64 that prints what a real boot
# would, or nothing, or a kernel report, boot by boot: a clean boot is not retried; a console that
# stays empty for RESMEM_BOOT_SILENT_S is stopped, kept as OUT.boot1 and booted again; two such
# boots fail; a report before the guest's TAP header is acted on under the debug kernel only; a
# kernel panic before it, under any kernel.
set -euo pipefail
if [[ -n "${TEST_SRCDIR:-}" ]]; then
	SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"
else
	SRC="$(cd "$(dirname "$0")/../.." && pwd)"
fi
TMP="${TEST_TMPDIR:-$(mktemp -d)}/boot-test"
rm -rf "$TMP" && mkdir -p "$TMP/bin"
cat >"$TMP/bin/qemu-system-x86_64" <<'STANDIN'
#!/usr/bin/env bash
# The stand-in: STANDIN_MODE says what boot number N (counted in $STANDIN_COUNT) prints.
n=$(($(cat "$STANDIN_COUNT" 2>/dev/null || echo 0) + 1))
echo "$n" >"$STANDIN_COUNT"
case "$STANDIN_MODE:$n" in
	clean:*|silent-once:2|report-once:2|panic-once:2) printf 'Linux version 6.1.0 (stand-in)\nTAP version 14\n1..1\nok 1 - a\n'; exit 0 ;;
	silent-once:1|silent-always:*) exec sleep 60 ;;
	panic-once:1|panic-always:*) printf 'Linux version 6.1.0 (stand-in)\nOops: int3: 0000 [#1] PREEMPT SMP NOPTI\nKernel panic - not syncing: Fatal exception in interrupt\n'; exit 0 ;;
	report-once:1) printf 'Linux version 6.1.0 (stand-in)\nBUG: KASAN: wild-memory-access in do_raw_spin_lock\n'; exec sleep 60 ;;
esac
echo "stand-in: unknown mode $STANDIN_MODE" >&2
exit 3
STANDIN
chmod +x "$TMP/bin/qemu-system-x86_64"
export PATH="$TMP/bin:$PATH"

# What boot() reads from the lane script.
VMLINUZ=/dev/null
WORK="$TMP"
EDU_DEVICES=()
log() { echo "kmod-lane: $*" >>"$TMP/log"; }
# shellcheck source=ci/qemu/boot.sh
source "$SRC/ci/qemu/boot.sh"

failed=0
n=0
# check NAME MODE DEBUG WANT_RC WANT_BOOTS WANT_KEPT LOG_PATTERN: one boot() call.
# A silent console is given up on after RESMEM_BOOT_SILENT_S = 4 s (boot() looks every 0.5 s):
# the stand-in must have started and counted itself by then. With 1 s (2 s in practice, when
# boot() looked every 2 s) it once had not, on the 2-core build machine under the ASan lane's
# compiles (2026-11-25: "booted 1 times, want 2" with both consoles kept), and the test failed on
# the machine's load, not on boot(). RESMEM_QEMU_TIMEOUT = 5 s ends the one boot that runs to the
# stand-in's end (its sleep of 60 s).
check() {
	local name=$1 mode=$2 debug=$3 want_rc=$4 want_boots=$5 want_kept=$6 pattern=$7 rc=0 why=""
	n=$((n + 1))
	rm -f "$TMP/count" "$TMP/log" "$TMP"/console.log*
	STANDIN_MODE=$mode STANDIN_COUNT="$TMP/count" RESMEM_KERNEL_DEBUG=$debug \
		RESMEM_BOOT_SILENT_S=4 RESMEM_QEMU_TIMEOUT=5 boot "$TMP/console.log" 1G "console=ttyS0" || rc=$?
	local boots kept
	boots=$(cat "$TMP/count" 2>/dev/null || echo 0)
	kept=$(find "$TMP" -maxdepth 1 -name 'console.log.boot*' | wc -l)
	[[ $rc == "$want_rc" ]] || why+=" returned $rc, want $want_rc;"
	[[ $boots == "$want_boots" ]] || why+=" booted $boots times, want $want_boots;"
	[[ $kept == "$want_kept" ]] || why+=" kept $kept consoles, want $want_kept;"
	if [[ -n $pattern ]] && ! grep -q -E "$pattern" "$TMP/log" 2>/dev/null; then
		why+=" the log does not say /$pattern/ (log: $({ cat "$TMP/log" 2>/dev/null || true; } | tr '\n' ' '));"
	fi
	if [[ -z $why ]]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name:$why"
		failed=1
	fi
}

echo "TAP version 14"
echo "1..8"
check "a clean boot is not retried, and logs when its TAP header came" clean 0 0 1 0 "boot try 1: the guest's TAP header after [0-9]+ s"
check "an empty console is stopped, kept and booted again" silent-once 0 0 2 1 "console stayed empty"
check "two empty consoles fail the boot, both kept" silent-always 0 1 2 2 "try 2 of 2"
check "a report before the TAP header retries under the debug kernel" report-once 1 0 2 1 "reported during its own boot"
# Without the debug kernel the report is left to the guest's cases: the boot runs on (here to the
# stand-in's end, which RESMEM_QEMU_TIMEOUT cuts at 5 s: timeout's status 124).
check "the same report is not acted on outside the debug kernel" report-once 0 124 1 0 ""
# A panic in the kernel's own boot (QEMU exits, no TAP header) is retried under any kernel.
check "a kernel panic before the TAP header is kept and booted again" panic-once 0 0 2 1 "panicked in its own boot"
check "two such panics fail the boot, both kept" panic-always 0 1 2 2 "try 2 of 2"
# The silent limit's defaults: 180 s for the release kernels, 600 s for the debug kernel; the
# variable wins over both.
n=$((n + 1))
limits="$(RESMEM_BOOT_SILENT_S= RESMEM_KERNEL_DEBUG= boot_silent_s) $(RESMEM_BOOT_SILENT_S= RESMEM_KERNEL_DEBUG=1 boot_silent_s) $(RESMEM_BOOT_SILENT_S=7 RESMEM_KERNEL_DEBUG=1 boot_silent_s)"
if [[ $limits == "180 600 7" ]]; then echo "ok $n - the silent limit: 180 s release, 600 s debug, RESMEM_BOOT_SILENT_S over both"
else echo "not ok $n - the silent limit: got $limits, want 180 600 7"; failed=1; fi
exit $failed
