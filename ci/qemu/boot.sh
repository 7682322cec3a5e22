# boot OUT MEM APPEND [QEMU ARGS...]: boots the guest once under TCG, console to OUT, and retries
# a boot that went wrong before the guest's first case. Sourced by kmod_lane.sh (and by
# boot_test.sh, which gives it a stand-in qemu-system-x86_64). Reads VMLINUZ, WORK (the initramfs
# is WORK/initramfs.cpio.gz), EDU_DEVICES, RESMEM_KERNEL_DEBUG, RESMEM_BOOT_BAD,
# RESMEM_BOOT_SILENT_S, RESMEM_QEMU_TIMEOUT, and calls log(). Returns QEMU's status, or 1 when
# both tries went wrong.
#
# The debug kernel's own boot can report before any module is loaded: on the loaded build machine
# one boot in four of the same bzImage printed "BUG: KASAN: wild-memory-access in
# do_raw_spin_lock" from handle_edge_irq during cpu_detect and repeated it until the timeout
# (2026-11-23). That is the kernel's, not the driver's: when a report appears before the guest's
# TAP header, the boot is stopped at once, its first report logged, its console kept as OUT.bootN,
# and the guest booted again, twice at most; a report in every try fails the lane (no plan).
# A boot whose console stays empty for RESMEM_BOOT_SILENT_S seconds is stopped and retried the same
# way: one debug-kernel boot on the build machine printed nothing at all until the lane's 3,300 s
# limit killed it (2026-11-24, console.log 0 bytes), and one 6.12 IOMMU boot of the release lane
# printed nothing before /init (2026-11-30). The release kernels boot with loglevel=4, so their
# console's first line is /init's TAP header: the guest's clock read 4.7-17.6 s at the first
# kernel line after it in a day's lane runs (2026-11-30, both kernels, both parts; decompression
# under TCG adds up to 7 s), so the default gives them 180 s; the debug kernel (KASAN, lockdep,
# kmemleak) 600 s. Each boot logs how long its TAP header took. The console is looked at every
# BOOT_POLL_S (0.5 s: a grep of a file that holds a few lines until the TAP header).
# A kernel panic before the guest's TAP header (any kernel: QEMU exits, -no-reboot) is retried
# the same way.
BOOT_BAD='BUG:|WARNING:|Kernel panic|general protection'
BOOT_POLL_S=0.5
# boot_kept OUT TRY WHY: keeps try TRY's console as OUT.bootTRY and logs why the try was given up.
boot_kept() {
	cp "$1" "$1.boot$2"
	log "$3 (try $2 of 2; console kept as $(basename "$1").boot$2)"
}
# boot_silent_s: how long a boot's console may stay empty (above): RESMEM_BOOT_SILENT_S when set,
# else 600 s for the debug kernel and 180 s for the release kernels.
boot_silent_s() {
	if [[ -n "${RESMEM_BOOT_SILENT_S:-}" ]]; then echo "$RESMEM_BOOT_SILENT_S"
	elif [[ "${RESMEM_KERNEL_DEBUG:-}" == 1 ]]; then echo 600
	else echo 180; fi
}
boot() {
	local out=$1 mem=$2 append=$3 try qpid bad t0 silent
	silent=$(boot_silent_s)
	shift 3
	for try in 1 2; do
		# Emptied here, not by the redirect below: that runs in the background child, and until it
		# has, the loop would read the try before's console (its report) and give this try up too.
		: >"$out"
		timeout "${RESMEM_QEMU_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg "$@" -cpu max -m "$mem" -smp 2 \
			-no-reboot -display none -serial stdio -monitor none -kernel "$VMLINUZ" \
			-initrd "$WORK/initramfs.cpio.gz" "${EDU_DEVICES[@]}" -append "$append" </dev/null >"$out" 2>&1 &
		qpid=$!
		t0=$(date +%s)
		while kill -0 "$qpid" 2>/dev/null && ! grep -q '^TAP version' "$out" 2>/dev/null; do
			if [[ "${RESMEM_KERNEL_DEBUG:-}" == 1 ]] && bad=$(grep -a -m1 -E "${RESMEM_BOOT_BAD:-$BOOT_BAD}" "$out"); then
				bad="the kernel reported during its own boot, before the guest's first case: ${bad//$'\r'/}"
			elif [[ ! -s "$out" ]] && (($(date +%s) - t0 >= silent)); then
				bad="the guest's console stayed empty for $silent s (a hung boot)"
			else
				sleep "$BOOT_POLL_S"
				continue
			fi
			kill "$qpid" 2>/dev/null
			wait "$qpid"
			boot_kept "$out" "$try" "$bad"
			[[ $try == 2 ]] && return 1
			continue 2
		done
		grep -q '^TAP version' "$out" 2>/dev/null && log "boot try $try: the guest's TAP header after $(($(date +%s) - t0)) s ($(basename "$out"))"
		wait "$qpid"
		local rc=$?
		# A kernel that died in its own boot, before the guest's first case: the 6.12 kernel's
		# IOMMU boot once panicked in early init under TCG ("Oops: int3" in sched_clock_cpu, a
		# jump label being patched on the other vCPU; 2026-11-29, before any module was loaded).
		# The kernel's and QEMU's, not the driver's: kept and booted again, as above.
		if ! grep -q '^TAP version' "$out" 2>/dev/null && bad=$(grep -a -m1 'Kernel panic' "$out"); then
			boot_kept "$out" "$try" "the kernel panicked in its own boot, before the guest's first case: ${bad//$'\r'/}"
			[[ $try == 2 ]] && return 1
			continue
		fi
		return $rc
	done
}
