#!/bin/bash
# Builds the debug kernel for the kmod lane (//ci/qemu:kmod_lane_debug_test, docs/reliability.md
# "Debug kernel"): Debian's linux-source of one of the lane's kernels, configured for QEMU with
# KASAN (generic, inline), lockdep (PROVE_LOCKING), DEBUG_VM, KMEMLEAK and KCOV, and everything the
# module and the guest cases use built in. Built once and cached:
#   $RESMEM_DEBUG_KERNEL_CACHE (default /root/.cache/resmem-debug-kernel)/<version>-<config hash>/
#     bzImage          the kernel the lane boots
#     build/           the prepared output tree (O=), for `make -C build M=... modules`
#     src -> ../linux-source-<ver>   the source tree build/ refers to
#     kernelrelease    `make kernelrelease` (the vermagic the module must carry)
#     build-seconds    wall time of the build
#     builder-suite    the Debian release whose root the tree was built in, and its modules must
#                      be (kmod_lane.sh RESMEM_KERNEL_BUILDER); absent: built on this machine
#   $CACHE/current -> <version>-<hash>   what the lane picks up for 6.1 (current-7.3 for 7.3)
# The config hash covers this script's config section, so any change to the config below makes a
# new cache entry; both kernel lines take the same config.
# Usage: ci/qemu/build_debug_kernel.sh [--kernel-line 6.1|7.3] [--print-dir]
#   --kernel-line 6.1   (default) the kernel the lane boots by default (linux-headers-amd64's),
#                       built on this machine from its linux-source-6.1
#   --kernel-line 7.3   the lane's 7.3 kernel (the newest 7.3.x of Debian 13's backports), built
#                       with linux-source-7.3 in the lane's trixie root (ci/qemu/builder_root.sh):
#                       Debian 12's gcc-12 cannot build it
#   --print-dir         print the entry's path, build nothing; exit 1 when it is not built
# Needs root for apt-get when packages are missing.
# Time: 600 s (7.3) and 1,164 s (6.1, beside a QEMU lane) on the 2-core build machine, 2026-12-01
# (docs/reliability.md has the measured figures).
set -euo pipefail

log() { echo "debug-kernel: $*" >&2; }
die() { echo "debug-kernel: ERROR: $*" >&2; exit 1; }

CACHE="${RESMEM_DEBUG_KERNEL_CACHE:-/root/.cache/resmem-debug-kernel}"
KMOD_CACHE="${RESMEM_KMOD_CACHE:-/var/cache/resmem-kmod}"
SELF="$(readlink -f "$0")"
LINE=6.1
PRINT_DIR=0
while (($#)); do
	case "$1" in
	--kernel-line) LINE=${2:?--kernel-line needs 6.1 or 7.3}; shift 2 ;;
	--print-dir) PRINT_DIR=1; shift ;;
	*) die "unknown argument '$1': use [--kernel-line 6.1|7.3] [--print-dir]" ;;
	esac
done
# shellcheck source=ci/qemu/builder_root.sh
source "$(dirname "$SELF")/builder_root.sh"
WORK=$(mktemp -d /tmp/resmem-debug-kernel.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The kernel: its release (KVER), Debian package version (PKGVER) and source package (SRCPKG).
# dpkg-query, apt-get and make run where the kernel is built (in_builder): here for 6.1, in the
# root for 7.3.
case "$LINE" in
6.1)
	SUITE=
	KVER=$(dpkg-query -W -f '${Depends}' linux-headers-amd64 2>/dev/null | grep -o 'linux-headers-[0-9][^ ,]*-amd64' | head -1 | sed 's/^linux-headers-//')
	[[ -n "$KVER" ]] || die "linux-headers-amd64 is not installed: apt-get install linux-headers-amd64"
	CURRENT=current ;;
7.3)
	SUITE=trixie
	ROOT="$KMOD_CACHE/$SUITE-root"
	if ((PRINT_DIR)); then
		KVER=$(builder_root_kver "$ROOT" "$LINE")
		[[ -n $KVER ]] || exit 1
	else
		builder_root_ensure "$ROOT" "$SUITE" "$LINE"
		KVER=$BUILDER_KVER
	fi
	BUILDER_ROOT=$ROOT
	BUILDER_BINDS=("$CACHE")
	CURRENT=current-$LINE ;;
*) die "--kernel-line $LINE: the debug kernel is made for the lane's 6.1 and 7.3" ;;
esac
mkdir -p "$CACHE"
dpkg_query() { in_builder dpkg-query "$@"; }
# Its Debian package version (6.1.0-56-amd64 -> 6.1.192-2): the linux-source we build must be it.
# shellcheck disable=SC2016 # dpkg-query's format, not the shell's (also below)
PKGVER=$(dpkg_query -W -f '${Version}' "linux-headers-$KVER")
SRCPKG="linux-source-$(grep -oE '^[0-9]+\.[0-9]+' <<<"$KVER")"  # 6.1.0-56-amd64, 7.3.4+deb13-amd64 -> 6.1, 7.3
HASH=$( (echo "$PKGVER"; sed -n '/^# ---- config/,/^# ---- end of config/p' "$SELF") | sha256sum | cut -c1-12)
ENTRY="$CACHE/$PKGVER-$HASH"

if ((PRINT_DIR)); then
	[[ -r "$ENTRY/bzImage" && -r "$ENTRY/build/Module.symvers" ]] || exit 1
	echo "$ENTRY"; exit 0
fi
if [[ -r "$ENTRY/bzImage" && -r "$ENTRY/build/Module.symvers" ]]; then
	log "already built: $ENTRY ($(cat "$ENTRY/build-seconds" 2>/dev/null || echo '?') s)"
	ln -sfn "$(basename "$ENTRY")" "$CACHE/$CURRENT"
	echo "$ENTRY"; exit 0
fi

# ---- packages ------------------------------------------------------------------------------------
missing=()
for p in bc bison flex libelf-dev libssl-dev dwarves xz-utils make gcc; do
	dpkg_query -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# The source of exactly the lane's kernel: the archive may carry a newer revision of
# linux-source-6.1 than of the headers (6.1.192-3 beside 6.1.192-2 on 2026-11-28).
# shellcheck disable=SC2016
[[ "$(dpkg_query -W -f '${Version}' "$SRCPKG" 2>/dev/null)" == "$PKGVER" ]] || missing+=("$SRCPKG=$PKGVER")
if ((${#missing[@]})); then
	[[ $(id -u) == 0 ]] || die "missing packages ${missing[*]} and not root: apt-get install ${missing[*]}"
	log "installing ${missing[*]}${SUITE:+ in $ROOT}"
	in_builder env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --allow-downgrades \
		-o DPkg::Lock::Timeout=300 "${missing[@]}" >"$WORK/apt.log" 2>&1 ||
		{ tail -20 "$WORK/apt.log" >&2; die "apt-get install ${missing[*]} failed${SUITE:+ in $ROOT}"; }
fi
# shellcheck disable=SC2016
SRCVER=$(dpkg_query -W -f '${Version}' "$SRCPKG")
[[ "$SRCVER" == "$PKGVER" ]] ||
	die "$SRCPKG is $SRCVER but the lane's kernel $KVER is $PKGVER: apt-get install $SRCPKG=$PKGVER"

# ---- source --------------------------------------------------------------------------------------
SRC="$CACHE/linux-source-$PKGVER"
if [[ ! -r "$SRC/Makefile" ]]; then
	log "extracting /usr/src/$SRCPKG.tar.xz into $SRC"
	rm -rf "$SRC.tmp" && mkdir -p "$SRC.tmp"
	tar -xf "${BUILDER_ROOT}/usr/src/$SRCPKG.tar.xz" -C "$SRC.tmp" --strip-components=1
	mv "$SRC.tmp" "$SRC"
fi
mkdir -p "$ENTRY/build"
ln -sfn "../$(basename "$SRC")" "$ENTRY/src"
O="$ENTRY/build"
M() { in_builder make -C "$SRC" O="$O" ARCH=x86_64 "$@"; }
CFG() { "$SRC/scripts/config" --file "$O/.config" "$@"; }

# ---- config --------------------------------------------------------------------------------------
M defconfig >/dev/null
M kvm_guest.config >/dev/null
CFG --set-str LOCALVERSION "-resmem-debug" --disable LOCALVERSION_AUTO
# What the lane boots with: serial console, initramfs (gzip), devtmpfs, PCI on QEMU's q35/i440fx,
# ACPI power-off (busybox poweroff -f), tmpfs (/dev/shm), debugfs (PAT list, kmemleak, kcov).
CFG --enable SERIAL_8250 --enable SERIAL_8250_CONSOLE --enable BLK_DEV_INITRD --enable RD_GZIP \
	--enable DEVTMPFS --enable DEVTMPFS_MOUNT --enable PCI --enable ACPI --enable TMPFS \
	--enable SHMEM --enable DEBUG_FS --enable DEBUG_FS_ALLOW_ALL --enable PROC_FS --enable SYSFS \
	--enable PRINTK --enable KALLSYMS --enable KALLSYMS_ALL --enable BINFMT_ELF --enable BINFMT_SCRIPT
# Modules, signed: the build makes its own key (certs/signing_key.pem in the output tree) and the
# kernel trusts it; the lane signs the modules it builds against this tree with it
# (scripts/sign-file), so they load where signatures are enforced, under lockdown too: the
# lockdown boot (guest_init.sh, resmem_suite=sig) needs a kernel that trusts the lane's modules,
# which Debian's kernels (trusting Debian's keys only) cannot be.
CFG --enable MODULES --enable MODULE_UNLOAD --disable MODULE_FORCE_UNLOAD --disable MODVERSIONS \
	--enable MODULE_SIG --disable MODULE_SIG_ALL --disable MODULE_SIG_FORCE --enable MODULE_SIG_SHA256 \
	--set-str MODULE_SIG_KEY "certs/signing_key.pem" --set-str SYSTEM_TRUSTED_KEYS "" \
	--disable MODULE_COMPRESS_XZ --disable MODULE_COMPRESS_ZSTD --enable MODULE_COMPRESS_NONE
# The lockdown LSM (security/lockdown), off unless the command line says lockdown=, and securityfs
# (/sys/kernel/security/lockdown, which the doctor reads).
CFG --enable SECURITY --enable SECURITYFS --enable SECURITY_LOCKDOWN_LSM \
	--enable SECURITY_LOCKDOWN_LSM_EARLY --enable LOCK_DOWN_KERNEL_FORCE_NONE --set-str LSM "lockdown"
# What kmod/resmem.c and the guest cases use, as in Debian's config.amd64_none_amd64: memremap_pages
# (ZONE_DEVICE), huge mappings (THP, pud/pmd), PAT and MTRR (cache types), the firmware memmap,
# pagemap, hugetlb (nr_hugepages), /dev/mem strictness, 5-level paging and KASLR of the direct map.
CFG --enable MEMORY_HOTPLUG --enable MEMORY_HOTREMOVE --enable SPARSEMEM_VMEMMAP --enable ZONE_DEVICE \
	--enable TRANSPARENT_HUGEPAGE --enable TRANSPARENT_HUGEPAGE_ALWAYS --enable HUGETLBFS \
	--enable X86_PAT --enable MTRR --enable FIRMWARE_MEMMAP --enable PROC_PAGE_MONITOR \
	--enable STRICT_DEVMEM --enable IO_STRICT_DEVMEM --enable X86_5LEVEL --enable RANDOMIZE_MEMORY \
	--enable PREEMPT_VOLUNTARY --enable PREEMPT_DYNAMIC --enable MIGRATION \
	--disable HZ_1000 --enable HZ_250 --set-val HZ 250
# The checkers.
CFG --enable DEBUG_KERNEL \
	--enable KASAN --enable KASAN_GENERIC --enable KASAN_INLINE --disable KASAN_OUTLINE \
	--enable KASAN_VMALLOC \
	--enable PROVE_LOCKING --enable DEBUG_ATOMIC_SLEEP --enable DEBUG_SPINLOCK \
	--enable DEBUG_MUTEXES --enable DEBUG_RWSEMS --enable DEBUG_LOCK_ALLOC \
	--enable DEBUG_VM --enable DEBUG_VM_PGFLAGS \
	--enable DEBUG_KMEMLEAK --disable DEBUG_KMEMLEAK_DEFAULT_OFF --disable DEBUG_KMEMLEAK_TEST \
	--set-val DEBUG_KMEMLEAK_MEM_POOL_SIZE 65536 --enable DEBUG_KMEMLEAK_AUTO_SCAN \
	--enable KCOV --disable KCOV_INSTRUMENT_ALL --enable KCOV_ENABLE_COMPARISONS \
	--enable STACKTRACE --enable DEBUG_LIST --enable BUG_ON_DATA_CORRUPTION \
	--disable PANIC_ON_OOPS --disable DEBUG_INFO --enable DEBUG_INFO_NONE \
	--disable DEBUG_INFO_DWARF4 --disable DEBUG_INFO_DWARF5 --disable DEBUG_INFO_BTF
# The guest's udevd (the access cases) needs sockets and nothing of a network: AF_NETLINK for the
# kernel's uevents and AF_UNIX for its control socket ("Failed to create socket: Function not
# implemented" without them).
CFG --enable NET --enable UNIX --disable INET --disable NETDEVICES --disable ETHERNET \
	--disable NETFILTER --disable WIRELESS --disable WLAN --disable RFKILL --disable NET_9P \
	--disable ETHTOOL_NETLINK
# Nothing else the guest does not use (build time on 2 cores): no graphics, sound, USB,
# wireless, disk filesystems, security modules, virtualization host.
CFG --disable DRM --disable FB --disable SOUND --disable SND --disable USB_SUPPORT \
	--disable WLAN --disable WIRELESS --disable CFG80211 --disable BT --disable HID \
	--disable INPUT_MOUSE --disable INPUT_JOYSTICK --disable INPUT_TABLET --disable INPUT_TOUCHSCREEN \
	--disable MD --disable ATA --disable SCSI --disable BLK_DEV_NVME --disable NETWORK_FILESYSTEMS \
	--disable EXT4_FS --disable EXT2_FS --disable EXT3_FS --disable BTRFS_FS --disable XFS_FS \
	--disable AUTOFS_FS --disable ISO9660_FS --disable MSDOS_FS --disable VFAT_FS --disable FUSE_FS \
	--disable QUOTA --disable SECURITY_SELINUX --disable SECURITY_APPARMOR --disable AUDIT \
	--disable KVM --disable XEN --disable HYPERV --disable AGP --disable CPU_FREQ \
	--disable HIBERNATION --disable SUSPEND --disable PROFILING --disable PERF_EVENTS_INTEL_UNCORE \
	--disable VIRTIO_BLK --disable VIRTIO_CONSOLE --disable HW_RANDOM --disable I2C --disable RTC_CLASS \
	--disable BLK_DEV_LOOP --disable BLK_DEV_DM --disable CRYPTO_DEV_VIRTIO --disable EFI \
	--disable FTRACE --disable KPROBES --disable BPF_SYSCALL
# ---- end of config -------------------------------------------------------------------------------
M olddefconfig >/dev/null
# olddefconfig drops what a dependency forbids: the checkers must have survived.
for opt in KASAN KASAN_GENERIC KASAN_INLINE PROVE_LOCKING DEBUG_VM DEBUG_KMEMLEAK KCOV MODULES \
	MODULE_UNLOAD ZONE_DEVICE TRANSPARENT_HUGEPAGE X86_PAT MTRR FIRMWARE_MEMMAP PROC_PAGE_MONITOR \
	DEVTMPFS BLK_DEV_INITRD RD_GZIP SERIAL_8250_CONSOLE DEBUG_FS TMPFS HUGETLBFS DEBUG_ATOMIC_SLEEP \
	NET UNIX MODULE_SIG SECURITY_LOCKDOWN_LSM SECURITYFS; do
	grep -q "^CONFIG_$opt=y" "$O/.config" || die "CONFIG_$opt is not =y after olddefconfig (a dependency is off)"
done
grep -q '^# CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF is not set' "$O/.config" || die "kmemleak would be off by default"
grep -q '^CONFIG_LSM=".*lockdown' "$O/.config" || die "the lockdown LSM is not in CONFIG_LSM"

# ---- build ---------------------------------------------------------------------------------------
log "building $(M -s kernelrelease) into $O (nice -n 10, -j2); log: $O/build.log"
T0=$(date +%s)
in_builder nice -n 10 make -C "$SRC" O="$O" ARCH=x86_64 -j2 bzImage modules >"$O/build.log" 2>&1 ||
	{ tail -40 "$O/build.log" >&2; die "kernel build failed (log $O/build.log)"; }
T1=$(date +%s)
M -s kernelrelease >"$ENTRY/kernelrelease"
cp "$O/arch/x86/boot/bzImage" "$ENTRY/bzImage"
echo $((T1 - T0)) >"$ENTRY/build-seconds"
if [[ -n $SUITE ]]; then echo "$SUITE" >"$ENTRY/builder-suite"; else rm -f "$ENTRY/builder-suite"; fi
# Free what M= builds do not need: objects of the kernel itself (vmlinux, System.map, .config,
# Module.symvers, include/, scripts/ with sign-file, certs/signing_key.* and arch/x86/include stay).
[[ -r "$O/certs/signing_key.pem" && -x "$O/scripts/sign-file" ]] ||
	die "the build left no certs/signing_key.pem or scripts/sign-file to sign the lane's modules with"
find "$O" -name '*.o' ! -path "$O/scripts/*" ! -path "$O/tools/*" -delete
rm -f "$O/vmlinux.o" "$O/vmlinux.a"
ln -sfn "$(basename "$ENTRY")" "$CACHE/$CURRENT"
log "built $(cat "$ENTRY/kernelrelease") in $((T1 - T0)) s: $ENTRY"
echo "$ENTRY"
