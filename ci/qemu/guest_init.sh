#!/bin/busybox sh
# /init of the kmod lane's guest. Runs every case, prints TAP ("ok N - name") on the console, then
# powers off. The kernel command line (ci/qemu/kmod_lane.sh) reserves:
#   memmap=64M$0x40000000 memmap=64M$0x44000000   RAM, for the functional cases
#   memmap=1G$0x100000000                          RAM above 4 GiB, for the benchmark
#   memmap=64M$0xbe000000 memmap=64M$0xc0000000   half RAM half PCI hole; PCI hole (QEMU -m 5G)
#   memmap=64M$0xfc000000                          IOAPIC/HPET/LAPIC/BIOS area below 4 GiB
# Unknown kernel parameters arrive as environment variables: resmem_only=NAME runs one case.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug
export PATH=/bin
# udev (Debian's systemd-udevd, packed by kmod_lane.sh) applies /etc/udev/rules.d/99-resmem.rules
# (kmod/99-resmem.rules) to each /dev/resmemN as the module creates it.
mount -t tmpfs run /run && mkdir -p /run/udev
UDEVD=no
if [ -x /lib/systemd/systemd-udevd ] && /lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1; then
	UDEVD=yes
	udevadm trigger --action=add >/dev/null 2>&1
	udevadm settle --timeout=30
fi

G=/resmem_guest
N=0
FAILED=0
echo "TAP version 13"
# tap NAME COMMAND...: one case. Output lines of the command are diagnostics ("# ...").
tap() {
	name=$1; shift
	if [ -n "$resmem_only" ] && [ "$resmem_only" != "$name" ]; then return 0; fi
	N=$((N + 1))
	echo "# case $name: $*"
	"$@" 2>&1 | sed -e 's/^\([^#]\)/# \1/'
	rc=$(cat /tmp/rc 2>/dev/null)
	if [ "$rc" = 0 ]; then echo "ok $N - $name"; else echo "not ok $N - $name"; FAILED=$((FAILED + 1)); fi
}
# run_rc: runs a command and stores its exit status for tap (a pipeline loses it).
run_rc() { "$@"; echo $? > /tmp/rc; }
t() { name=$1; shift; tap "$name" run_rc "$@"; }

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

FUNC='ranges=64M$0x40000000,64M$0x44000000'

# Which driver every case below loads: the lane's build of it (dkms from the resmem-dkms package
# by default; /resmem.ko.origin says), checked against the sha256 the lane passed on the command line.
t driver_module_origin sh -c 'echo "/resmem.ko: built by $(cat /resmem.ko.origin)"; s=$(sha256sum /resmem.ko | cut -d" " -f1); echo "sha256 $s, the lane built $resmem_ko_sha256"; [ -n "$resmem_ko_sha256" ] && [ "$s" = "$resmem_ko_sha256" ]'

# ---- c, load checks: ranges the module must refuse, with the reason on the console ----------
t c_refuses_system_ram         $G expect-refused /resmem.ko 'ranges=64M$0x50000000' EPERM "System RAM"
t c_refuses_pci_hole           $G expect-refused /resmem.ko 'ranges=64M$0xc0000000' ENXIO "PCI Bus"
t c_refuses_half_ram_half_hole $G expect-refused /resmem.ko 'ranges=64M$0xbe000000' EBUSY "overlaps another resource"
t c_refuses_apic_bios_area     $G expect-refused /resmem.ko 'ranges=64M$0xfc000000' EBUSY "overlaps another resource"
t c_refuses_firmware_reserved  $G expect-refused /resmem.ko 'ranges=16K$0xfeffc000' ENXIO "no RAM behind it"
t c_refuses_legacy_bios        $G expect-refused /resmem.ko 'ranges=64K$0xf0000' ENXIO "legacy BIOS"
t load_refuses_unreserved      $G expect-refused /resmem.ko 'ranges=64M$0x200000000' EADDRNOTAVAIL "not entirely inside"
t load_refuses_unaligned       $G expect-refused /resmem.ko 'ranges=64M$0x40000800' EDOM "not page aligned"
t load_refuses_size_zero       $G expect-refused /resmem.ko 'ranges=0$0x40000000' ERANGE "size zero"
t load_refuses_overflow        $G expect-refused /resmem.ko 'ranges=0x2000$0xfffffffffffff000' EOVERFLOW "overflows"
t load_refuses_garbage         $G expect-refused /resmem.ko 'ranges=lots$of$memory' EINVAL "cannot parse"
t load_refuses_overlap         $G expect-refused /resmem.ko 'ranges=64M$0x40000000,4M$0x40000000' EBUSY "overlaps another resource"
t load_refuses_pages_wc        $G expect-refused /resmem.ko "$FUNC mode=pages cache=wc" EINVAL "supports cache=wb only"

# ---- production module: resmem0 pfnmap, resmem1 pages ---------------------------------------
if load /resmem.ko "$FUNC" mode=pfnmap,pages; then
	dmesg | grep 'resmem: resmem' | sed 's/^/# console: /'
	t a_pfnmap_vmflags_pf_io_sim_gpu_refuses_plain  $G facts /dev/resmem0 pfnmap
	t a_pages_vmflags_mm_sim_gpu_accepts_plain      $G facts /dev/resmem1 pages
	# The device-parity transcript (mock/parity, docs/parity.md) of both modes; the lane compares
	# them with mock/parity/golden/kmod.txt on the host.
	t parity_probe_pfnmap sh -c 'time /resmem_parity_probe /dev/resmem0 >/tmp/p0; rc=$?; sed "s/^/parity-pfnmap| /" /tmp/p0; exit $rc'
	t parity_probe_pages  sh -c 'time /resmem_parity_probe /dev/resmem1 >/tmp/p1; rc=$?; sed "s/^/parity-pages| /" /tmp/p1; exit $rc'
	# Access control (issue 10 item 5): the rule's owner, group and mode on the node; a user in
	# no group of it gets EACCES; a member of group resmem and root open and map it.
	t access_udevd_running                          udev_up
	t access_udev_rule_applied                      $G udev-rule /dev/resmem0 /etc/udev/rules.d/99-resmem.rules
	t access_udev_rule_applied_pages                $G udev-rule /dev/resmem1 /etc/udev/rules.d/99-resmem.rules
	t access_nonmember_eacces                       $G open-as 65534 65534 - /dev/resmem0 EACCES
	t access_own_group_not_resmem_eacces            $G open-as 1000 1000 - /dev/resmem0 EACCES
	t access_group_member_opens                     $G open-as 1000 1000 resmem /dev/resmem0 ok
	t access_root_opens                             $G open-as 0 0 - /dev/resmem0 ok
	t d_ioctl_garbage_pfnmap                        $G ioctl-garbage /dev/resmem0
	t d_ioctl_garbage_pages                         $G ioctl-garbage /dev/resmem1
	t d_mmap_bounds_pfnmap                          $G mmap-bounds /dev/resmem0
	t d_mmap_bounds_pages                           $G mmap-bounds /dev/resmem1
	t d_concurrent_opens_and_maps                   $G concurrent /dev/resmem0 /dev/resmem1
	t d_unload_while_mapped_refused                 $G unload-while-mapped /dev/resmem1 resmem
	t e_integrity_pfnmap                            $G integrity /dev/resmem0
	t e_integrity_pages                             $G integrity /dev/resmem1
	# The scenario files, unchanged from the simulator's runs, on the real module (backend kmod:
	# this guest's /proc and /sys, /dev/resmemN, the CUDA model judging the real mappings).
	for f in /scenarios/kmod/*.toml; do
		s=${f##*/}
		t "scenario_kmod_${s%.toml}" /resmem run --backend kmod --verbose "$f"
	done
	t d_unload_after_unmap                          rmmod resmem
else
	t module_loads false
fi

# ---- test build: real long-term pin, then the fault-injection reproductions -----------------
if load /resmem_test.ko "$FUNC" mode=pfnmap,pages; then
	t a_pages_real_longterm_pin                     $G pin /dev/resmem1 yes
	t a_pfnmap_longterm_pin_refused                 $G pin /dev/resmem0 no
	t b_failing_fault_handler_sigbus                $G fault-sigbus /dev/resmem0
	t d_kernel_log_clean_before_seed002             sh -c "! dmesg | grep -E 'Oops|BUG:|WARNING:|general protection|Bad pagetable|Call Trace'"
	t b_seed002_corrupted_page_table                $G corrupted-page-table /dev/resmem0
	t b_unload_after_reproductions                  rmmod resmem_test
else
	t test_module_loads false
fi

# ---- cache types and the benchmark: resmem0 1 GiB pages wb, resmem1 pfnmap wc, resmem2 pfnmap uc
if load /resmem.ko 'ranges=1G$0x100000000,64M$0x40000000,64M$0x44000000' mode=pages,pfnmap cache=wb,wc,uc; then
	t a_cache_types_in_pat                          $G cache-types /dev/resmem0 /dev/resmem1 /dev/resmem2
	# read/write through the write-combining and uncached kernel mappings (ioremap_wc/_uc).
	t parity_probe_wc sh -c 'time /resmem_parity_probe /dev/resmem1 >/tmp/p2; rc=$?; sed "s/^/parity-wc| /" /tmp/p2; exit $rc'
	t parity_probe_uc sh -c 'time /resmem_parity_probe /dev/resmem2 >/tmp/p3; rc=$?; sed "s/^/parity-uc| /" /tmp/p3; exit $rc'
	t a_huge_mappings_save_page_tables              $G huge-page-tables /dev/resmem0
	t bench                                         $G bench /dev/resmem0 /dev/resmem1 /dev/resmem2
	rmmod resmem
else
	t bench_module_loads false
fi

# A last look for trouble (the seed-002 "Bad pagetable" oops is the one expected kernel complaint).
t kernel_log_clean_at_end sh -c "! dmesg | grep -E 'BUG:|WARNING:|general protection|Kernel panic'"

echo "1..$N"
echo "resmem-guest: done, $FAILED failed"
poweroff -f
