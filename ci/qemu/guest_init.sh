#!/bin/busybox sh
# /init of the kmod lane's guest. Runs every case, prints TAP ("ok N - name") on the console, then
# powers off. The kernel command line (ci/qemu/kmod_lane.sh) reserves:
#   memmap=64M$0x40000000 memmap=64M$0x44000000   RAM, for the functional cases
#   memmap=1G$0x100000000                          RAM above 4 GiB, for the benchmark
#   memmap=64M$0xbe000000 memmap=64M$0xc0000000   half RAM half PCI hole; PCI hole (QEMU -m 5G)
#   memmap=64M$0xfc000000                          IOAPIC/HPET/LAPIC/BIOS area below 4 GiB
# Unknown kernel parameters arrive as environment variables: resmem_only=NAME runs one case
# (shell patterns, comma-separated: resmem_only='edu_*,p2p_unload' runs those); resmem_skip=NAMES
# leaves out the cases it names, in the same form (kmod_lane.sh --part: the driver's cases apart
# from the engine's).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null  # lockdown's state (the doctor reads it)
export PATH=/bin

G=/resmem_guest
N=0
FAILED=0
echo "TAP version 13"
# The debug kernel lane (kmod_lane.sh with RESMEM_KERNEL_DEBUG=1 boots with resmem_kcheck=1):
# after each case the kernel log lines it added, and a kmemleak scan, are checked; a KASAN, lockdep,
# DEBUG_VM, WARN or kmemleak report fails the case that caused it, naming the line. VM_FAULT_OOM:
# a fault handler that answered OOM without being out of memory (mm/oom_kill.c logs it, retries).
KBAD='BUG:|WARNING:|KASAN|possible circular locking|inconsistent lock state|possible recursive locking|sleeping function called|suspicious RCU usage|general protection|Oops|kernel BUG|Bad page|list_(add|del) corruption|UBSAN|bad unlock balance|lock held when returning|DEBUG_LOCKS_WARN_ON|Kernel panic|bad (pmd|pud|pte|p4d|pgd) |VM_FAULT_OOM leaked'
# Cases whose kernel complaint is the point of the case (the seed-002 reproduction).
KBAD_EXPECTED=" b_seed002_corrupted_page_table "
KSEEN=0
# kcheck NAME: 0 when the kernel stayed quiet since the last call; else prints the lines.
kcheck() {
	[ -w /sys/kernel/debug/kmemleak ] && echo scan > /sys/kernel/debug/kmemleak
	dmesg > /tmp/kc.log
	total=$(wc -l < /tmp/kc.log)
	[ "$total" -lt "$KSEEN" ] && KSEEN=0   # the ring buffer was cleared
	tail -n +$((KSEEN + 1)) /tmp/kc.log | grep -E "$KBAD" > /tmp/kc.bad
	KSEEN=$total
	if [ -r /sys/kernel/debug/kmemleak ] && grep -q 'unreferenced object' /sys/kernel/debug/kmemleak; then
		grep -A12 'unreferenced object' /sys/kernel/debug/kmemleak | head -40 | sed 's/^/kmemleak: /' >> /tmp/kc.bad
		echo clear > /sys/kernel/debug/kmemleak
	fi
	[ -s /tmp/kc.bad ] || return 0
	case "$KBAD_EXPECTED" in *" $1 "*) sed "s/^/# kernel (expected by $1): /" /tmp/kc.bad | head -5; return 0;; esac
	sed "s/^/# kernel: /" /tmp/kc.bad | head -20
	return 1
}
# matches LIST NAME: whether NAME matches one of LIST's comma-separated shell patterns.
matches() {
	_rest="$1,"
	while [ -n "$_rest" ]; do
		_pat=${_rest%%,*}; _rest=${_rest#*,}
		[ -n "$_pat" ] || continue
		case "$2" in $_pat) return 0;; esac
	done
	return 1
}
# selected NAME: whether case NAME runs in this boot: named by resmem_only (when given) and not by
# resmem_skip (when given).
selected() {
	{ [ -z "$resmem_only" ] || matches "$resmem_only" "$1"; } &&
		{ [ -z "$resmem_skip" ] || ! matches "$resmem_skip" "$1"; }
}
# tap NAME COMMAND...: one case. Output lines of the command are diagnostics ("# ...").
tap() {
	name=$1; shift
	selected "$name" || return 0
	[ -n "$DRY" ] && { WANTED=1; return 0; }
	N=$((N + 1))
	echo "# case $name: $*"
	rm -f /tmp/tap_skip
	_t0=$(cut -d' ' -f1 /proc/uptime)
	"$@" 2>&1 | sed -e 's/^\([^#]\)/# \1/'
	rc=$(cat /tmp/rc 2>/dev/null)
	# The case's time in the guest (the lane's JUnit time attribute, docs/build.md).
	awk -v t0="$_t0" '{ printf "# time %.2f s\n", $1 - t0 }' /proc/uptime
	if [ -n "$resmem_kcheck" ] && ! kcheck "$name"; then echo "# FAIL: the kernel reported the lines above during $name"; rc=1; fi
	# A command that could not apply here writes its reason to /tmp/tap_skip: a TAP SKIP with it.
	skip=$(cat /tmp/tap_skip 2>/dev/null)
	if [ "$rc" = 0 ]; then echo "ok $N - $name${skip:+ # SKIP $skip}"; else echo "not ok $N - $name"; FAILED=$((FAILED + 1)); fi
}
# run_rc: runs a command and stores its exit status for tap (a pipeline loses it).
run_rc() { "$@"; echo $? > /tmp/rc; }
t() { name=$1; shift; tap "$name" run_rc "$@"; }
# wanted FUNCTION: whether this boot runs any case FUNCTION holds (resmem_only, resmem_skip), asked
# before the module its cases need is loaded: FUNCTION is called with tap only noting a selected
# name, so a boot loads nothing for a group whose every case it skips (the engine part's first
# boot skipped four such loads, 7.5 s of guest time; docs/build.md). FUNCTION must run cases
# through t and nothing else.
DRY=
wanted() {
	WANTED= DRY=1
	"$1"
	DRY=
	[ -n "$WANTED" ]
}

load() { # load KO PARAMS...: insmod with a diagnostic on failure; waits for udev's rules
	insmod "$@" || { echo "# insmod $* failed"; dmesg | tail -5; return 1; }
	[ $UDEVD = yes ] && udevadm settle --timeout=30
	return 0
}
# udev_up: the access cases need udevd; say why when it is not there.
udev_up() {
	[ $UDEVD = yes ] && { echo "udevd: $(udevadm --version) running"; return 0; }
	echo "udevd did not start (kmod_lane.sh packs Debian's udev; was the download refused?):"
	cat /tmp/udevd.log 2>/dev/null
	return 1
}

# udev (Debian's systemd-udevd, packed by kmod_lane.sh) applies /etc/udev/rules.d/99-resmem.rules
# (kmod/99-resmem.rules) to each /dev/resmemN as the module creates it. Only the access_* cases
# read what it sets (the node's owner, group and mode; every other case runs as root on the node
# devtmpfs made): a boot that runs none of them starts no udevd, and saves its trigger and settle
# (1.9 s of guest time a boot under TCG, 2026-11-30: the engine part's three boots, the driver
# part's IOMMU and signing boots).
mount -t tmpfs run /run && mkdir -p /run/udev
UDEVD=no
# The cases that read what udev set (production_cases runs them, on the production module).
access_cases() {
	t access_udevd_running                          udev_up
	t access_udev_rule_applied                      $G udev-rule /dev/resmem0 /etc/udev/rules.d/99-resmem.rules
	t access_udev_rule_applied_pages                $G udev-rule /dev/resmem1 /etc/udev/rules.d/99-resmem.rules
	t access_nonmember_eacces                       $G open-as 65534 65534 - /dev/resmem0 EACCES
	t access_own_group_not_resmem_eacces            $G open-as 1000 1000 - /dev/resmem0 EACCES
	t access_group_member_opens                     $G open-as 1000 1000 resmem /dev/resmem0 ok
	t access_root_opens                             $G open-as 0 0 - /dev/resmem0 ok
}
if [ -n "$resmem_suite" ] || ! wanted access_cases; then  # the IOMMU and signing boots hold none
	:
elif [ -x /lib/systemd/systemd-udevd ] && /lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1; then
	UDEVD=yes
	udevadm trigger --action=add >/dev/null 2>&1
	udevadm settle --timeout=30
fi

# seed003 FILE: a seed-003 scenario, unchanged from the simulator's runs, on the kmod backend: its
# p2p steps go to the real resmem_edu.ko and nv_p2p_standin.ko (backends/kmod/kmod_gpudirect.h). A
# file that does not apply here (its not_applicable.kmod) is printed N/A by the runner and
# reported as a TAP SKIP with that reason. Files with `iommu = true` run in the IOMMU boot.
seed003() {
	/resmem run --backend kmod --verbose --json /tmp/seed003.json "$1"
	rc=$?
	if [ $rc = 0 ] && grep -q '"verdict": "N/A"' /tmp/seed003.json; then
		sed -n 's/^ *"reason": "\(.*\)",$/not applicable on kmod: \1/p' /tmp/seed003.json | head -1 > /tmp/tap_skip
	fi
	return $rc
}
# seed003_all iommu|mask28|plain: the seed-003 files that want the IOMMU (the IOMMU boot), edu with a
# 28-bit mask (their [step.on.kmod] says dma_mask = 28: the first boot's reload for
# p2p_dma_mask_refused), or neither; one case each.
seed003_all() {
	for f in /scenarios/seed003/*.toml; do
		[ -e "$f" ] || continue  # none packed (kmod_lane.sh --part driver)
		if grep -q '^iommu = true' "$f"; then w=iommu; elif grep -q '^dma_mask = 28' "$f"; then w=mask28; else w=plain; fi
		[ "$w" = "$1" ] || continue
		s=${f##*/}
		t "scenario_seed003_${s%.toml}" seed003 "$f"
	done
}

# card_scenario FILE: a card scenario file on the kmod backend against the lane's device process, as
# seed003 runs its files (not_applicable.kmod a SKIP with the reason; in a boot without the device,
# every one a SKIP saying so).
card_scenario() {
	if [ "$resmem_card" != 1 ]; then
		echo "this boot has no card device (kmod_lane.sh starts ci/qemu/card_device on the first boot unless RESMEM_CARD=0)" > /tmp/tap_skip
		return 0
	fi
	seed003 "$1"  # the same run: the file on kmod, its N/A a SKIP with the reason
}
# card_guest_run ARGS...: /card_guest (ci/qemu/card_guest.cc) when the boot has the card device.
card_guest_run() {
	if [ "$resmem_card" != 1 ]; then
		echo "this boot has no card device (kmod_lane.sh starts ci/qemu/card_device on the first boot unless RESMEM_CARD=0)" > /tmp/tap_skip
		return 0
	fi
	/card_guest "$@"
}

FUNC='ranges=64M$0x40000000,64M$0x44000000'
# firmware_map: the firmware's memory map as the kernel keeps it (/sys/firmware/memmap).
firmware_map() {
	for e in /sys/firmware/memmap/*; do echo "firmware map: $(cat "$e/start")-$(cat "$e/end") $(cat "$e/type")"; done | sort -t: -k2
}
# load_without_ranges N RANGE... [LINE]: the driver loaded with no address serves exactly N devices,
# over each RANGE (a-b, as its "serving [mem a-b]" line says); a last argument with a space is a
# line the load must also print (a grep pattern).
load_without_ranges() {
	want=$1; shift
	before=$(dmesg | wc -l)
	insmod /resmem.ko || { dmesg | tail -5; return 1; }
	ls /dev/resmem[0-9]* | tr '\n' ' '; echo
	rmmod resmem
	dmesg | tail -n +$((before + 1)) | grep -E 'resmem: (no range|resmem[0-9]: serving|not serving)' >/tmp/lwr.log
	cat /tmp/lwr.log
	for r in "$@"; do
		case "$r" in
		*" "*) grep -q "$r" /tmp/lwr.log || { echo "no line '$r'"; return 1; } ;;
		*) grep -q "serving \[mem $r\]" /tmp/lwr.log || { echo "no device for [mem $r]"; return 1; } ;;
		esac
	done
	[ "$(grep -c ': serving \[mem' /tmp/lwr.log)" = "$want" ] && grep -q "serving the $want range(s)" /tmp/lwr.log
}
# What no boot may end with in its kernel log (the *kernel_log_clean_at_end cases).
KEND='BUG:|WARNING:|general protection|Kernel panic'
# doctor_iommu STATE FINDING: `resmem doctor` on this guest (the host platform: its /sys/class/iommu,
# /sys/kernel/iommu_groups, /sys/firmware/acpi/tables, /proc/cmdline) reports the IOMMU in STATE
# with FINDING. The raw sysfs first, as evidence; the doctor's exit status is not the point (the
# first boot's reservations over holes are errors by design).
doctor_iommu() {
	echo "units: $(ls /sys/class/iommu 2>&1 | tr '\n' ' ')"
	for g in /sys/kernel/iommu_groups/*; do [ -r "$g/type" ] && echo "group ${g##*/}: $(cat "$g/type") $(ls "$g/devices" | tr '\n' ' ')"; done
	echo "acpi tables: $(ls /sys/firmware/acpi/tables 2>&1 | tr '\n' ' ')"
	/resmem doctor --json /tmp/doctor.json >/tmp/doctor.txt 2>&1
	grep -E '^  IOMMU:|^\[[a-z]+\] iommu-|^    evidence: /sys/class/iommu' /tmp/doctor.txt
	grep -q "^\[[a-z]*\] $2:" /tmp/doctor.txt && grep -q "\"state\": \"$1\"" /tmp/doctor.json
}
# The IOMMU boot's options the kernel does not take (kmod_lane.sh): the kernel prints each line the
# doctor quotes for them, and the doctor names all four (iommu=on is skipped without a line).
doctor_iommu_options_ignored() {
	/resmem doctor >/tmp/doctor.txt 2>&1
	bad=
	for l in "DMAR: Unknown option - 'bogus'" "AMD-Vi: Unknown option - 'on'" "Malformed early option 'iommu.passthrough'"; do
		if dmesg | grep -qF "$l"; then echo "the kernel printed: $l"; else echo "the kernel did NOT print: $l"; bad=1; fi
		grep -qF "$l" /tmp/doctor.txt || { echo "the doctor does not quote: $l"; bad=1; }
	done
	grep -E '^\[[a-z]+\] iommu-option' /tmp/doctor.txt
	n=$(grep -c '^\[warning\] iommu-option-ignored' /tmp/doctor.txt)
	echo "iommu-option-ignored findings: $n (want 4)"
	[ "$n" = 4 ] && [ -z "$bad" ]
}

# ---- the IOMMU boot (kmod_lane.sh: q35 with intel-iommu, resmem_suite=iommu; docs/rdma.md) -----
# Only the edu cases that need a translating IOMMU: the DMA API gives the device IOVAs (a 32-bit
# device then reaches a range above 4 GiB), and a DMA to a bus address nobody mapped faults.
E=/resmem_edu_guest
if [ "$resmem_suite" = iommu ]; then
	[ -n "$resmem_kcheck" ] && t iommu_debug_kernel_boot_log_clean true
	t doctor_iommu_translating doctor_iommu translating iommu-translating
	t doctor_iommu_options_ignored doctor_iommu_options_ignored
	t iommu_load_without_ranges_serves_memmap load_without_ranges 2 '0x40000000-0x43ffffff' '0x100000000-0x103ffffff'
	if load /resmem_edu.ko 'ranges=64M$0x40000000,64M$0x100000000' dma_bits=64,32; then
		dmesg | grep -E 'resmem_edu: resmem_edu|DMAR: (IOMMU|Intel)' | sed 's/^/# console: /'
		t edu_iommu_dma_api_blocks_into_reserved    $E blocks /dev/resmem_edu0 /dev/resmem0 8192 3 2 iommu
		t edu_iommu_32bit_reaches_above_4g          $E blocks /dev/resmem_edu1 /dev/resmem1 4096 3 2 iommu
		t edu_iommu_unmapped_dma_faults             $E unmapped /dev/resmem_edu0 /dev/resmem0
		# GPUDirect RDMA behind the IOMMU: nvidia_p2p_dma_map_pages gives edu IOVAs of the BAR.
		if [ "$resmem_p2p" = 0 ]; then
			echo "# the GPUDirect RDMA cases are left out (resmem_p2p=0: kmod_lane.sh RESMEM_P2P=0)"
		elif load /nv_p2p_standin.ko; then
			t p2p_iommu_pin_gives_iova              /resmem_p2p_guest pin /dev/resmem_edu0 iommu
			t p2p_iommu_dma                         /resmem_p2p_guest dma /dev/resmem_edu0 4096 2
			t p2p_iommu_guide_phys_addr_faults      /resmem_p2p_guest phys-addr /dev/resmem_edu0 iommu
			seed003_all iommu
		else
			t p2p_iommu_provider_loads false
		fi
		t edu_iommu_unload                          rmmod resmem_edu
		grep -q '^nv_p2p_standin ' /proc/modules && t p2p_iommu_provider_unload rmmod nv_p2p_standin
	else
		t edu_iommu_module_loads false
	fi
	t iommu_kernel_log_clean_at_end sh -c "! dmesg | grep -E '$KEND'"
	echo "1..$N"
	echo "resmem-guest: done, $FAILED failed"
	poweroff -f
fi

# ---- the module-signing boot (kmod_lane.sh: module.sig_enforce=1 lockdown=integrity,
# resmem_suite=sig; docs/kmod.md "Module signing"): what Secure Boot does to a module dkms built.
# sig_refused KO LINE: insmod KO fails with "Key was rejected by service" and the kernel says LINE.
sig_refused() {
	before=$(dmesg | wc -l)
	if out=$(insmod "$1" 2>&1); then echo "insmod $1 loaded it"; rmmod "${1##*/}" 2>/dev/null; return 1; fi
	echo "$out"
	dmesg | tail -n +$((before + 1)) | grep -v 'resmem_kcheck' | sed 's/^/kernel: /'
	echo "$out" | grep -q 'Key was rejected by service' && dmesg | tail -n +$((before + 1)) | grep -q "$2"
}
# signed KO: the module carries an appended signature (dkms signs what it builds with its own key).
signed() { [ "$(tail -c 28 "$1")" = "~Module signature appended~" ]; }
# sig_doctor yes|no: `resmem doctor --module /resmem.ko` on the signing boot names lockdown's refusal
# of the address parameters, and the module's signature refused unless this kernel trusts its key.
sig_doctor() {
	/resmem doctor --module /resmem.ko --json /tmp/sig_doctor.json >/tmp/sig_doctor.txt 2>&1
	grep -E '^  (module policy|module|load):|^\[[a-z]+\] (module-|lockdown-|secure-boot|modules-)' /tmp/sig_doctor.txt
	grep -q '^\[warning\] lockdown-refuses-addresses:' /tmp/sig_doctor.txt || { echo "no lockdown-refuses-addresses finding"; return 1; }
	if [ "$1" = no ]; then
		grep -q '^\[error\] module-signature-rejected:' /tmp/sig_doctor.txt || { echo "no module-signature-rejected finding"; return 1; }
	else
		! grep -q 'module-signature-rejected' /tmp/sig_doctor.txt || { echo "module-signature-rejected on a kernel that loads the module"; return 1; }
	fi
}
# skip REASON: a case that cannot apply on this kernel says why (a TAP SKIP with the reason).
skip() { echo "$*" > /tmp/tap_skip; }
if [ "$resmem_suite" = sig ]; then
	echo "# sig_enforce $(cat /sys/module/module/parameters/sig_enforce 2>&1); lockdown: $(cat /sys/kernel/security/lockdown 2>&1)"
	# Does this kernel trust the lane's modules? Debian's trust Debian's keys only; the debug
	# kernel trusts its own build key, which the lane signs its modules with (kmod_lane.sh).
	if insmod /resmem.ko 2>/tmp/sig_probe.log; then trusted=yes; rmmod resmem; else trusted=no; fi
	echo "# the driver (no parameters) $( [ $trusted = yes ] && echo loads || echo "is refused: $(cat /tmp/sig_probe.log)")"
	OWNKEY="every module the lane built is signed with a key this kernel trusts (the debug kernel's own)"
	FOREIGN="this kernel trusts only its distributor's keys, so no module built here loads under lockdown; the lockdown cases run in the debug lane (ci/qemu/kmod_lane_debug.sh), whose kernel trusts the lane's key"
	if [ $trusted = no ]; then
		t sig_unsigned_test_module_refused sig_refused /resmem_test.ko 'Loading of unsigned module is rejected'
		if signed /resmem.ko; then
			t sig_driver_key_not_trusted_refused sig_refused /resmem.ko 'Loading of module with unavailable key is rejected'
		else
			t sig_driver_key_not_trusted_refused sig_refused /resmem.ko 'Loading of unsigned module is rejected'
		fi
		t sig_lockdown_refuses_address_parameters skip "$FOREIGN"
		t sig_lockdown_serves_memmap_without_addresses skip "$FOREIGN"
	else
		t sig_unsigned_test_module_refused skip "$OWNKEY"
		t sig_driver_key_not_trusted_refused skip "$OWNKEY"
		# Under lockdown the kernel refuses the address parameters (module_param_hw; kernel/params.c
		# param_check_unsafe), and the driver loaded without them serves what memmap= reserved.
		t sig_lockdown_refuses_address_parameters sh -c 'before=$(dmesg | wc -l); ! insmod /resmem.ko "ranges=64M\$0x40000000" && dmesg | tail -n +$((before + 1)) | tee /dev/stderr | grep -q "unsafe module parameters is restricted"'
		t sig_lockdown_serves_memmap_without_addresses load_without_ranges 1 '0x40000000-0x43ffffff'
	fi
	# The doctor on this boot: lockdown refuses the address parameters; the module's signature is
	# refused where the kernel does not trust its key, with the way out (engine/doctor).
	t sig_doctor_names_the_refusal sig_doctor $trusted
	t sig_kernel_log_clean_at_end sh -c "! dmesg | grep -E '$KEND'"
	echo "1..$N"
	echo "resmem-guest: done, $FAILED failed"
	poweroff -f
fi

# Which driver every case below loads: the lane's build of it (dkms from the resmem-dkms package
# by default; /resmem.ko.origin says), checked against the sha256 the lane passed on the command line.
t driver_module_origin sh -c 'echo "/resmem.ko: built by $(cat /resmem.ko.origin)"; s=$(sha256sum /resmem.ko | cut -d" " -f1); echo "sha256 $s, the lane built $resmem_ko_sha256"; [ -n "$resmem_ko_sha256" ] && [ "$s" = "$resmem_ko_sha256" ]'
# Boot itself must be quiet under the debug kernel (else the first case would be blamed).
[ -n "$resmem_kcheck" ] && t debug_kernel_boot_log_clean true

# ---- c, load checks: ranges the module must refuse, with the reason on the console ----------
t c_refuses_system_ram         $G expect-refused /resmem.ko 'ranges=64M$0x50000000' EPERM "System RAM"
t c_refuses_pci_hole           $G expect-refused /resmem.ko 'ranges=64M$0xc0000000' ENXIO "PCI Bus"
# Ranges the firmware's own map reserved (SeaBIOS's last 128 KiB below the PCI hole, the BIOS area
# below 4 GiB) are refused by name before anything else looks at them: at 0xbffe0000 there is RAM
# behind the firmware's reservation, which the probe would take for the user's (firmware_map
# prints /sys/firmware/memmap, the map the module reads, as the evidence). 0xfeffc000 is in no
# entry of the firmware's map: the probe finds nothing there.
firmware_reserved_ram() { firmware_map; $G expect-refused /resmem.ko 'ranges=128K$0xbffe0000' ENXIO "firmware's memory map"; }
t c_refuses_firmware_reserved_ram firmware_reserved_ram
# The loader cannot hand the module another firmware map: with /sys/firmware/memmap covered by one
# that calls everything System RAM, the same range is refused the same way. The module reads the
# kernel's table (up to 6.18) or a sysfs mount of its own (6.19 on: kmod/resmem.c
# firmware_map_load), never the loader's view (under lockdown that map is all that keeps firmware
# memory from being served).
firmware_map_not_the_loaders() {
	mkdir -p /tmp/fakemap/0 && echo 0x0 >/tmp/fakemap/0/start && echo 0xffffffffff >/tmp/fakemap/0/end &&
		echo 'System RAM' >/tmp/fakemap/0/type && mount -o bind /tmp/fakemap /sys/firmware/memmap || return 1
	echo "the loader's /sys/firmware/memmap now: $(cat /sys/firmware/memmap/0/start)-$(cat /sys/firmware/memmap/0/end) $(cat /sys/firmware/memmap/0/type), $(ls /sys/firmware/memmap | wc -l) entry"
	$G expect-refused /resmem.ko 'ranges=128K$0xbffe0000' ENXIO "firmware's memory map"
	rc=$?
	umount /sys/firmware/memmap
	return $rc
}
t c_firmware_map_not_the_loaders firmware_map_not_the_loaders
t c_refuses_half_ram_half_hole $G expect-refused /resmem.ko 'ranges=64M$0xbe000000' ENXIO "firmware's memory map"
t c_refuses_apic_bios_area     $G expect-refused /resmem.ko 'ranges=64M$0xfc000000' ENXIO "firmware's memory map"
t c_refuses_firmware_reserved  $G expect-refused /resmem.ko 'ranges=16K$0xfeffc000' ENXIO "no RAM behind it"
t c_refuses_legacy_bios        $G expect-refused /resmem.ko 'ranges=64K$0xf0000' ENXIO "legacy BIOS"
t load_refuses_unreserved      $G expect-refused /resmem.ko 'ranges=64M$0x200000000' EADDRNOTAVAIL "not entirely inside"
# memmap=64M$0x300000000 lies past RAM and the PCI windows, a hole on both sides: half of a range
# in it and half in the hole is not a reservation either (the kernel's region_intersects counts
# the hole as nothing, so a check with it alone let the claim fail EBUSY), and all of it has no
# RAM behind it.
t load_refuses_hole_into_reserved $G expect-refused /resmem.ko 'ranges=128M$0x2fc000000' EADDRNOTAVAIL "not entirely inside"
t load_refuses_reserved_into_hole $G expect-refused /resmem.ko 'ranges=128M$0x300000000' EADDRNOTAVAIL "not entirely inside"
t c_refuses_reservation_past_ram  $G expect-refused /resmem.ko 'ranges=64M$0x300000000' ENXIO "no RAM behind it"
t load_refuses_unaligned       $G expect-refused /resmem.ko 'ranges=64M$0x40000800' EDOM "not page aligned"
t load_refuses_size_zero       $G expect-refused /resmem.ko 'ranges=0$0x40000000' ERANGE "size zero"
t load_refuses_overflow        $G expect-refused /resmem.ko 'ranges=0x2000$0xfffffffffffff000' EOVERFLOW "overflows"
t load_refuses_garbage         $G expect-refused /resmem.ko 'ranges=lots$of$memory' EINVAL "cannot parse"
t load_refuses_bad_second_entry $G expect-refused /resmem.ko 'ranges=64M$0x40000000,64M$zz,1G$0x100000000' EINVAL "the address in '64M\$zz':"
# size= without phys= (phys misspelt) is not "no address given", and two ways at once are refused.
t load_refuses_size_without_phys $G expect-refused /resmem.ko 'size=0x4000000' EINVAL "phys= has 0 entries"
t load_refuses_ranges_and_phys  $G expect-refused /resmem.ko 'ranges=64M$0x40000000 phys=0x44000000 size=0x4000000' EINVAL "both given"
t load_refuses_overlap         $G expect-refused /resmem.ko 'ranges=64M$0x40000000,4M$0x40000000' EBUSY "overlaps another resource"
t load_refuses_pages_wc        $G expect-refused /resmem.ko "$FUNC mode=pages cache=wc" EINVAL "supports cache=wb only"
# Without addresses (the way to load under lockdown, which refuses them): the RAM that memmap=
# reserved, as the kernel's map holds it. The kernel merges the two adjacent 64 MiB reservations
# into one Reserved range, and grows the one over the PCI hole over the bus window, the BIOS area
# and the 1 GiB at 4 GiB: the driver cuts that into the runs the firmware lists as RAM (the RAM
# half of 0xbe000000, and 0x100000000) and leaves the firmware's reservations and the hole out.
# (The IOMMU boot's 4 GiB reservation touches the firmware's BIOS area, as memmap=188G$4G does on
# many machines: iommu_load_without_ranges_serves_memmap.)
t load_without_ranges_serves_memmap load_without_ranges 3 '0x40000000-0x47ffffff' \
	'0xbe000000-0xbffdffff' '0x100000000-0x13fffffff'
# A load that fails after its nodes exist leaves no open file behind (test build: fail_load_ms).
t d_failed_load_leaves_no_open_file $G open-during-failed-load /resmem_test.ko "$FUNC mode=pfnmap,pages fail_load_ms=1500" /dev/resmem0

# ---- production module: resmem0 pfnmap, resmem1 pages ---------------------------------------
production_cases() {
	t a_pfnmap_vmflags_pf_io_sim_gpu_refuses_plain  $G facts /dev/resmem0 pfnmap
	t a_pages_vmflags_no_pf_io_sim_gpu_accepts_plain $G facts /dev/resmem1 pages
	# The device-parity transcript (mock/parity, docs/parity.md) of both modes; the lane compares
	# them with mock/parity/golden/kmod.txt on the host.
	t parity_probe_pfnmap sh -c 'time /resmem_parity_probe /dev/resmem0 >/tmp/p0; rc=$?; sed "s/^/parity-pfnmap| /" /tmp/p0; exit $rc'
	t parity_probe_pages  sh -c 'time /resmem_parity_probe /dev/resmem1 >/tmp/p1; rc=$?; sed "s/^/parity-pages| /" /tmp/p1; exit $rc'
	# Access control (issue 10 item 5): the rule's owner, group and mode on the node; a user in
	# no group of it gets EACCES; a member of group resmem and root open and map it.
	access_cases
	t d_ioctl_garbage_pfnmap                        $G ioctl-garbage /dev/resmem0
	t d_ioctl_garbage_pages                         $G ioctl-garbage /dev/resmem1
	t d_mmap_bounds_pfnmap                          $G mmap-bounds /dev/resmem0
	t d_mmap_bounds_pages                           $G mmap-bounds /dev/resmem1
	t d_concurrent_opens_and_maps                   $G concurrent /dev/resmem0 /dev/resmem1
	# Two threads fault the same 2 MiB at once, over fresh mappings (huge=1; THP always and never).
	t d_concurrent_first_touch_pages                $G concurrent-first-touch /dev/resmem1 "${resmem_first_touch_rounds:-100}"
	t d_concurrent_first_touch_pfnmap               $G concurrent-first-touch /dev/resmem0 "${resmem_first_touch_rounds:-100}"
	# A mapping keeps the huge= it was made with (read at each fault, a change between two
	# threads' faults of one 2 MiB would send the second the 4 KiB way under the first's entry).
	t d_huge_kept_per_mapping_pages                 $G huge-kept-per-mapping /dev/resmem1
	t d_huge_kept_per_mapping_pfnmap                $G huge-kept-per-mapping /dev/resmem0
	t d_unload_while_mapped_refused                 $G unload-while-mapped /dev/resmem1 resmem
	# A 32-bit program: its ioctls go through compat_ioctl (kmod/tests/resmem_compat32.c).
	t d_compat32_ioctls_and_mmap                    /resmem_compat32 /dev/resmem0 0x40000000 0x4000000
	t e_integrity_pfnmap                            $G integrity /dev/resmem0
	t e_integrity_pages                             $G integrity /dev/resmem1
	# The scenario files, unchanged from the simulator's runs, on the real module (backend kmod:
	# this guest's /proc and /sys, /dev/resmemN, the CUDA model judging the real mappings).
	for f in /scenarios/kmod/*.toml; do
		[ -e "$f" ] || continue  # none packed (kmod_lane.sh --part driver)
		s=${f##*/}
		t "scenario_kmod_${s%.toml}" /resmem run --backend kmod --verbose "$f"
	done
	# The card (issue 28, docs/digitizer.md "In the QEMU guest"): ci/qemu/card_device on the host
	# writes blocks into resmem0's range (0x40000000) through the guest's shared RAM file while the
	# driver here reads them through this mapping; the scenario files are the simulator's, unchanged.
	for f in /scenarios/card/*.toml; do
		[ -e "$f" ] || continue  # none packed (kmod_lane.sh --part driver)
		s=${f##*/}
		t "card_scenario_${s%.toml}" card_scenario "$f"
	done
	t card_throughput card_guest_run throughput /dev/resmem0
	[ -n "$resmem_card_long" ] && t card_long_run card_guest_run long /dev/resmem0 "$resmem_card_long"
	# The first boot's machine (QEMU pc, SeaBIOS) has no IOMMU: no DMAR or IVRS table.
	t doctor_iommu_off doctor_iommu off iommu-off
	# Random syscall sequences (kmod/tests/resmem_seq.cc): seeded, replayable, shrinking; the module
	# is unloaded and loaded again along the way and at the end.
	t d_random_syscall_sequences /resmem_seq --seed "${resmem_seq_seed:-1}" --ops "${resmem_seq_ops:-10000}" \
		--threads 4 --module-name resmem --module-file /resmem.ko --kcov-sites "${resmem_kcov_sites:-0}"
	# The same with 2 MiB entries asked for (huge=1), where the kernel does not default to them.
	t d_random_syscall_sequences_huge /resmem_seq --seed "${resmem_seq_seed:-1}" --ops "${resmem_seq_ops:-10000}" \
		--threads 4 --module-name resmem --module-file /resmem.ko --huge --kcov-sites "${resmem_kcov_sites:-0}"
	t d_unload_after_unmap                          rmmod resmem
}
if ! wanted production_cases; then
	:
elif load /resmem.ko "$FUNC" mode=pfnmap,pages; then
	dmesg | grep 'resmem: resmem' | sed 's/^/# console: /'
	production_cases
else
	t module_loads false
fi
# Page references that outlive the mapping and the file (a pipe's, from vmsplice) keep the module
# loaded until they are released (pages mode; the case unloads it at the end).
pipe_cases() {
	t d_pages_held_past_close_keep_module           $G pipe-holds-pages /dev/resmem1 resmem
}
if ! wanted pipe_cases; then
	:
elif load /resmem.ko "$FUNC" mode=pfnmap,pages; then
	pipe_cases
	grep -q '^resmem ' /proc/modules && rmmod resmem
else
	t pipe_module_loads false
fi

# ---- test build: real long-term pin, then the fault-injection reproductions -----------------
test_build_cases() {
	t a_pages_real_longterm_pin                     $G pin /dev/resmem1 yes
	t a_pfnmap_longterm_pin_refused                 $G pin /dev/resmem0 no
	t b_failing_fault_handler_sigbus                $G fault-sigbus /dev/resmem0
	# The same meeting made certain (fault=3: every other 2 MiB fault waits before it reads the PMD):
	# the second fault must insert the 2 MiB entry again, not fall back to 4 KiB under it.
	t b_pmd_fault_race_inserts_again_pages          $G concurrent-first-touch /dev/resmem1 20 race
	t b_pmd_fault_race_inserts_again_pfnmap         $G concurrent-first-touch /dev/resmem0 20 race
	# The hold on page references past the last unmap looks again when a last unmap came while it
	# scanned (fault=4 pauses the scan past the first page, and a reference is taken behind it).
	t b_refs_taken_behind_scan_keep_hold            $G refs-behind-scan /dev/resmem1 resmem_test
	t d_kernel_log_clean_before_seed002             sh -c "! dmesg | grep -E 'Oops|BUG:|WARNING:|general protection|Bad pagetable|Call Trace'"
	t b_seed002_corrupted_page_table                $G corrupted-page-table /dev/resmem0
	t b_unload_after_reproductions                  rmmod resmem_test
}
if ! wanted test_build_cases; then
	:
elif load /resmem_test.ko "$FUNC" mode=pfnmap,pages; then
	test_build_cases
else
	t test_module_loads false
fi

# ---- cache types and the benchmark: resmem0 1 GiB pages wb, resmem1 pfnmap wc, resmem2 pfnmap uc
cache_cases() {
	t a_cache_types_in_pat                          $G cache-types /dev/resmem0 /dev/resmem1 /dev/resmem2
	# read/write through the write-combining and uncached kernel mappings (ioremap_wc/_uc).
	t parity_probe_wc sh -c 'time /resmem_parity_probe /dev/resmem1 >/tmp/p2; rc=$?; sed "s/^/parity-wc| /" /tmp/p2; exit $rc'
	t parity_probe_uc sh -c 'time /resmem_parity_probe /dev/resmem2 >/tmp/p3; rc=$?; sed "s/^/parity-uc| /" /tmp/p3; exit $rc'
	t a_huge_mappings_save_page_tables              $G huge-page-tables /dev/resmem0
	t bench                                         $G bench /dev/resmem0 /dev/resmem1 /dev/resmem2
}
if ! wanted cache_cases; then
	:
elif load /resmem.ko 'ranges=1G$0x100000000,64M$0x40000000,64M$0x44000000' mode=pages,pfnmap cache=wb,wc,uc; then
	cache_cases
	rmmod resmem
else
	t bench_module_loads false
fi

# ---- the device as producer (docs/rdma.md): QEMU's edu DMAs numbered blocks into the ranges ----
# resmem_edu.ko is resmem plus the edu driver: resmem0 pfnmap and resmem1 pages below 4 GiB,
# resmem2 pfnmap above it; resmem_edu0 is the lane's edu with a 64-bit DMA mask (00:10.0),
# resmem_edu1 the one with a 32-bit mask (00:11.0), as kmod_lane.sh sets dma_mask.
# resmem_only= and resmem_skip= may skip the unload cases above: what they leave loaded would hold the ranges.
for m in resmem resmem_test; do grep -q "^$m " /proc/modules && rmmod $m; done
edu_cases() {
	t edu_dma_blocks_into_reserved                  $E blocks /dev/resmem_edu0 /dev/resmem0 8192 4 2
	t edu_dma_blocks_into_reserved_pages            $E blocks /dev/resmem_edu0 /dev/resmem1 4096 3 2
	t edu_dma_64bit_reaches_above_4g                $E blocks /dev/resmem_edu0 /dev/resmem2 4096 3 2
	t edu_dma_32bit_below_4g_works                  $E blocks /dev/resmem_edu1 /dev/resmem0 4096 3 2
	t edu_dma_mask_refuses_above_4g                 $E refused /dev/resmem_edu1 /dev/resmem2
	t edu_dma_bad_requests                          $E bad-requests /dev/resmem_edu0 /dev/resmem0
	t edu_dma_bench                                 $E bench /dev/resmem_edu0 /dev/resmem2 4096,8192,16384 1
	t edu_dma_faults_lose_nothing                   $E faults /dev/resmem_edu0 /dev/resmem0 4096 32 4 0x5eed 300
	t edu_unload                                    rmmod resmem_edu
}
if ! wanted edu_cases; then
	:
elif load /resmem_edu.ko 'ranges=64M$0x40000000,64M$0x44000000,1G$0x100000000' mode=pfnmap,pages,pfnmap dma_bits=64,32; then
	dmesg | grep 'resmem_edu: resmem_edu' | sed 's/^/# console: /'
	edu_cases
else
	t edu_module_loads false
fi

# ---- GPUDirect RDMA (docs/rdma.md "GPUDirect RDMA in the guest"): edu writes into "GPU memory",
# the BAR of QEMU's ivshmem-plain served by nv_p2p_standin.ko (the guide's nvidia_p2p_* calls), peer
# to peer; resmem_edu.ko resolves those calls when a file first asks (symbol_get), so it loads and
# answers ENOPKG without the provider. resmem0 only: the P2P cases need no reserved range.
P=/resmem_p2p_guest
grep -q '^resmem_edu ' /proc/modules && rmmod resmem_edu
if [ "$resmem_p2p" = 0 ]; then
	echo "# the GPUDirect RDMA and dma-buf cases are left out (resmem_p2p=0: kmod_lane.sh RESMEM_P2P=0)"
elif load /resmem_edu.ko 'ranges=64M$0x40000000' dma_bits=64,32; then
	t p2p_provider_absent                           $P absent /dev/resmem_edu0
	if load /nv_p2p_standin.ko; then
		dmesg | grep 'nv_p2p_standin: ' | sed 's/^/# console: /'
		t p2p_pin                               $P pin /dev/resmem_edu0
		t p2p_dma                               $P dma /dev/resmem_edu0 8192 3
		t p2p_dma_32bit_device                  $P dma /dev/resmem_edu1 4096 2
		t p2p_revoke_in_flight                  $P revoke /dev/resmem_edu0
		# Races with cudaFree (kmod/nv_p2p_standin.c, kmod/resmem_edu_p2p.c; docs/reliability.md):
		# an unpin meeting the revocation, private and late mappings, transfers/close/mmap racing it.
		t p2p_unpin_during_revoke               $P unpin-during-revoke /dev/resmem_edu0
		t p2p_window_after_revoke               $P window-after-revoke /dev/resmem_edu0
		t p2p_write_waits_out_free              $P write-waits-out-free /dev/resmem_edu0
		t p2p_map_private_refused               $P map-private
		t p2p_race_free_transfer_close_mmap     $P race-free /dev/resmem_edu0 20
		t p2p_misaligned                        $P errors /dev/resmem_edu0 misaligned
		t p2p_bad_token                         $P errors /dev/resmem_edu0 bad_token
		t p2p_bad_version                       $P errors /dev/resmem_edu0 bad_version
		t p2p_bar_full                          $P bar-full /dev/resmem_edu0
		t p2p_lazy_unpin                        $P lazy-unpin /dev/resmem_edu0
		t p2p_bench                             $P bench /dev/resmem_edu0 4096,8192,16384 100
		t p2p_guide_phys_addr_without_iommu     $P phys-addr /dev/resmem_edu0
		t dmabuf_import                         $P dmabuf /dev/resmem_edu0
		seed003_all plain
		t d_random_sequences_edu_p2p            /resmem_seq --seed "${resmem_seq_seed:-1}" --ops "${resmem_seq_p2p_ops:-1500}" --threads 3 --p2p /dev/resmem_edu0,/dev/resmem_edu1
		t p2p_gpu_unbind_revokes                $P unbind /dev/resmem_edu0
		t p2p_nothing_leaked                    $P no-leaks
		# resmem_edu1 told a 28-bit mask (edu's default width): the BAR, below 4 GiB, is beyond it.
		if rmmod resmem_edu && load /resmem_edu.ko 'ranges=64M$0x40000000' dma_bits=64,28; then
			t p2p_dma_mask_refused          $P mask-refused /dev/resmem_edu1
			seed003_all mask28
		else
			t p2p_dma_mask_reload           false
		fi
		t p2p_provider_held_by_driver           $P held /dev/resmem_edu0
		t p2p_unload                            sh -c '! grep -q "^nv_p2p_standin " /proc/modules || rmmod nv_p2p_standin; rmmod resmem_edu'
	else
		t p2p_provider_loads false
	fi
else
	t p2p_module_loads false
fi

# A last look for trouble (the seed-002 "Bad pagetable" oops is the one expected kernel complaint).
t kernel_log_clean_at_end sh -c "! dmesg | grep -E '$KEND'"

echo "1..$N"
echo "resmem-guest: done, $FAILED failed"
poweroff -f
