#!/bin/bash
# The real-kernel lane for kmod/resmem.c, one kernel per run (Bazel: //ci/qemu:kmod_lane_driver and
# //ci/qemu:kmod_lane_engine run both kernels of a part side by side through kmod_lane_pair.sh;
# //ci/qemu:kmod_lane_6_1_engine and the like one kernel's part, by name; by hand:
# ci/qemu/kmod_lane.sh [KERNEL] after `bazel build //ci/qemu:kmod_lane_files`).
# KERNEL is one of:
#   --kernel-line 6.1     Debian's kernel line of that version (default 6.1): its headers package
#   --kernel-line 6.12    (linux-headers-amd64 for 6.1, linux-headers-6.12-amd64 for 6.12) is
#                         installed when missing and its vmlinuz taken from /boot or downloaded;
#   --kernel-line 7.3     the newest 7.3.x kernel of Debian 13's backports: built in a Debian 13
#                         root of the lane's own ($RESMEM_KMOD_CACHE/trixie-root, debootstrap;
#                         ci/qemu/builder_root.sh), since Debian 12's compiler cannot build
#                         against its headers; its vmlinuz is downloaded from the same archive;
#   --kernel VMLINUZ --headers DIR
#                         a kernel of the user's own: its image and its prepared headers or build
#                         tree (/lib/modules/RELEASE/build), e.g. a distribution kernel
#                         (docs/kmod.md "A kernel of your own").
# and optionally which of the guest's cases:
#   --part all            every case (default)
#   --part driver         the driver's own cases: every case but the engine's (below); needs
#                         neither the resmem command line, card_guest nor the scenario files, and
#                         boots without the card (RESMEM_CARD=0), so a change to the engine or to
#                         a scenario file does not run it again
#                         (Bazel: //ci/qemu:kmod_lane_driver, docs/build.md "Incremental");
#   --part engine         only the engine's cases in the guest, ENGINE_CASES below: the scenario
#                         files, the card's, and the doctor, run by the static resmem (and
#                         card_guest) on this kernel's driver (//ci/qemu:kmod_lane_engine).
#                         RESMEM_ONLY, when given, names the cases instead. It loads the driver
#                         dkms built, as the driver part does (the doctor's signing case reads
#                         dkms's signature), but leaves the `make install` check to the driver
#                         part.
#                         Either part builds the driver and boots every boot its cases need.
#  1. installs what is missing (qemu-system-x86 busybox-static cpio kmod, the line's headers);
#  2. takes the kernel version from the headers package (never uname -r: FACTS.md), extracts
#     that version's vmlinuz from `apt-get download linux-image-VER` when /boot lacks it (no
#     udev/systemd pulled in);
#  3. builds the driver, resmem.ko, the way a user's machine does: dkms builds it from the
#     resmem-dkms package (//packaging:resmem_dkms_deb, unpacked into a private dkms tree: nothing
#     is installed), and dkms's own make.log goes into the lane's log; builds resmem_test.ko (the
#     fault-injection build), resmem_edu.ko and nv_p2p_standin.ko with Kbuild; every build with
#     -Werror; checks the vermagics and that the feature probes (kmod/conftest.sh) found what
#     this kernel has (the lane's conftest_* cases). RESMEM_KMOD_DRIVER=kbuild builds the driver
#     with Kbuild too. The guest case driver_module_origin names the .ko it loads. On Debian's
#     lines a build that passed is kept in RESMEM_KMOD_CACHE/modules, named after the sha256 of
#     everything it read, and the next run on the same inputs (the other part, or the run after an
#     engine change) copies it instead of building (RESMEM_KMOD_BUILD_CACHE=0: build anyway);
#  4. packs an initramfs (busybox, /init = ci/qemu/guest_init.sh, the modules, the guest programs:
#     resmem_guest, resmem_edu_guest and resmem_p2p_guest of ci/qemu/, resmem_seq and
#     resmem_compat32 of kmod/tests/; the static resmem and scenarios/kmod/*.toml and
#     scenarios/seed003/*.toml, which the guest runs on the kmod backend: scenario_kmod_*,
#     scenario_seed003_*);
#  5. boots it under QEMU TCG (KVM here is broken: FACTS.md) with memmap= reservations;
#  6. turns the TAP on the console into JUnit XML ($XML_OUTPUT_FILE), one testcase per guest case,
#     in a test suite named after the kernel and part (kmod_lane_6_1_engine, kmod_lane_RELEASE):
#     ci/qemu/tap_junit.py, tested on its own by //ci/qemu:tap_junit_test.
# Exit 0 only when the guest printed its plan and every case is "ok".
# Environment: RESMEM_KMOD_CACHE (downloaded kernel and kept builds, default /var/cache/resmem-kmod),
# RESMEM_QEMU_TIMEOUT (seconds per boot, default 900), RESMEM_ONLY (run the guest cases whose name
# matches one of these comma-separated shell patterns: 'scenario_seed003_*,p2p_unload'), RESMEM_SKIP
# (leave out the guest cases named so),
# RESMEM_SEQ_OPS / RESMEM_SEQ_SEED (the random syscall sequences' length and seed, kmod/tests/resmem_seq.cc),
# RESMEM_SEQ_P2P_OPS (the length of those that also drive the DMA devices, d_random_sequences_edu_p2p).
# RESMEM_FIRST_TOUCH_ROUNDS (fresh mappings per THP policy of d_concurrent_first_touch_*, default 100).
# Another kernel (the debug kernel lane, ci/qemu/kmod_lane_debug.sh): RESMEM_KERNEL_IMAGE (a bzImage)
# with RESMEM_KERNEL_BUILD (its prepared build tree: the modules are built against it, not the
# Debian headers), as --kernel/--headers; RESMEM_KERNEL_BUILDER=SUITE builds them (and signs them)
# in the lane's root of that Debian release, as for 7.3 (the debug kernel of 7.3, built there);
# RESMEM_KERNEL_DEBUG=1 makes the guest fail a case on any KASAN, lockdep, DEBUG_VM, WARN or
# kmemleak report it caused.
# RESMEM_CARD=0 leaves out the card (issue 28, docs/digitizer.md "In the QEMU guest"): by default the
# first boot's RAM is a shared file in /dev/shm (removed at the end) and ci/qemu/card_device, the
# card's device process, writes blocks into the guest's reserved RAM through it while the guest runs
# the card_* cases. RESMEM_CARD_LONG=SECONDS adds card_long_run (off by default: 600 is the
# issue's 10-minute run with faults; the first boot's time limit grows by as much).
# RESMEM_BOOT_BAD (debug kernel: the pattern of a report during boot, see ci/qemu/boot.sh; a test sets
# it to exercise the retry). RESMEM_KMOD_DRIVER (dkms, the default, or kbuild: who builds resmem.ko).
# RESMEM_IOMMU_BOOT=0 leaves out the second boot (q35 with intel-iommu, the edu_iommu_* cases:
# docs/rdma.md). RESMEM_P2P=0 leaves out the GPUDirect RDMA and dma-buf cases (p2p_*,
# dmabuf_import, and the seed-003 files, scenario_seed003_*) of both boots. RESMEM_SIG_BOOT=0 leaves
# out the third boot (module.sig_enforce=1 lockdown=integrity, the sig_* cases).
set -euo pipefail

log() { echo "kmod-lane: $*" >&2; }
die() { echo "kmod-lane: ERROR: $*" >&2; exit 1; }
# The guest cases that run the engine (the static resmem, or card_guest, which links the engine's
# card backend): what --part engine runs and --part driver leaves out. A new case that runs the
# engine needs a name these patterns match; under --part driver it fails for want of /resmem.
ENGINE_CASES='scenario_kmod_*,scenario_seed003_*,card_*,doctor_iommu_*,sig_doctor_*'
# only_may PATTERN...: whether RESMEM_ONLY is unset or one of its comma-separated items matches one
# of the PATTERNs (a boot whose cases RESMEM_ONLY cannot name is left out).
only_may() {
	[[ -z "${RESMEM_ONLY:-}" ]] && return 0
	local item pat
	local -a items
	IFS=, read -ra items <<<"$RESMEM_ONLY"
	for item in "${items[@]}"; do
		for pat in "$@"; do
			# shellcheck disable=SC2053 # $pat is a pattern
			[[ $item == $pat ]] && return 0
		done
	done
	return 1
}

# ---- which kernel --------------------------------------------------------------------------------
KERNEL_LINE=6.1
PART=all
USER_IMAGE=${RESMEM_KERNEL_IMAGE:-}
USER_HEADERS=${RESMEM_KERNEL_BUILD:-}
while (($#)); do
	case "$1" in
	--kernel-line) KERNEL_LINE=${2:?--kernel-line needs a version: 6.1, 6.12 or 7.3}; shift 2 ;;
	--kernel) USER_IMAGE=${2:?--kernel needs the path of a kernel image: vmlinuz or bzImage}; shift 2 ;;
	--headers) USER_HEADERS=${2:?--headers needs the prepared headers or build tree of the kernel}; shift 2 ;;
	--part) PART=${2:?--part needs all, driver or engine}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1': use --kernel-line 6.1|6.12|7.3, or --kernel VMLINUZ --headers DIR (--help)" ;;
	esac
done
if [[ -n $USER_IMAGE || -n $USER_HEADERS ]]; then
	[[ -n $USER_IMAGE && -n $USER_HEADERS ]] ||
		die "a kernel of your own needs both --kernel VMLINUZ and --headers DIR (given: image '${USER_IMAGE}', headers '${USER_HEADERS}')"
	KERNEL_LINE=
fi
USER_BUILDER=${RESMEM_KERNEL_BUILDER:-}
[[ -z $USER_BUILDER || -n $USER_IMAGE ]] ||
	die "RESMEM_KERNEL_BUILDER=$USER_BUILDER is for a kernel of your own (--kernel, --headers); the kernel lines know their builder"
# Debian bookworm's kernel lines: the headers meta-package that follows each one; Debian 13's
# backports line: the release whose root builds its modules (BUILDER_SUITE).
BUILDER_SUITE=
case "$KERNEL_LINE" in
'') HEADERS_PKG= ;;
6.1) HEADERS_PKG=linux-headers-amd64 ;;
6.12) HEADERS_PKG=linux-headers-6.12-amd64 ;;
7.3) HEADERS_PKG='' BUILDER_SUITE=trixie ;;
*) die "--kernel-line $KERNEL_LINE: this lane knows Debian's 6.1, 6.12 and 7.3; for another kernel give --kernel VMLINUZ --headers DIR" ;;
esac
case "$PART" in
all) PART_SUFFIX= ;;
driver)
	PART_SUFFIX=_driver
	RESMEM_SKIP="$ENGINE_CASES${RESMEM_SKIP:+,$RESMEM_SKIP}"
	RESMEM_CARD=0
	;;
engine)
	PART_SUFFIX=_engine
	RESMEM_ONLY=${RESMEM_ONLY:-$ENGINE_CASES}
	;;
*) die "--part $PART: use all (every case), driver (all but the engine's) or engine (only the engine's)" ;;
esac

# ---- locate inputs (Bazel runfiles, or the source tree) ----------------------------------------
if [[ -n "${TEST_SRCDIR:-}" ]]; then
	SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"
else
	SRC="$(cd "$(dirname "$0")/../.." && pwd)"
fi
# program REL TARGET: the built program REL (in the runfiles, or under the tree's bazel-bin), or
# die naming the target that builds it.
program() {
	local p
	for p in "$SRC/$1" "$SRC/bazel-bin/$1"; do
		[[ -x $p ]] && { echo "$p"; return 0; }
	done
	die "${1##*/} not found; run: bazel build $2"
}
GUEST_BIN=$(program ci/qemu/resmem_guest //ci/qemu:resmem_guest)
SEQ_BIN=$(program kmod/tests/resmem_seq //kmod/tests:resmem_seq)
EDU_BIN=$(program ci/qemu/resmem_edu_guest //ci/qemu:resmem_edu_guest)
P2P_BIN=$(program ci/qemu/resmem_p2p_guest //ci/qemu:resmem_p2p_guest)
PROBE_BIN=$(program mock/parity/resmem_parity_probe //mock/parity:resmem_parity_probe)
# The engine's programs: not needed (nor packed) by --part driver.
if [[ $PART != driver ]]; then
	RESMEM_BIN=$(program engine/cli/resmem_static //engine/cli:resmem_static)
	CARD_GUEST_BIN=$(program ci/qemu/card_guest //ci/qemu:card_guest)
fi
# The card's device process on the host: only for a boot with the card (RESMEM_CARD, step 5).
[[ "${RESMEM_CARD:-1}" == 0 ]] || CARD_DEVICE_BIN=$(program ci/qemu/card_device //ci/qemu:card_device)
PARITY_GOLDEN="$SRC/mock/parity/golden/kmod.txt"
DRIVER_BUILD="${RESMEM_KMOD_DRIVER:-dkms}"
[[ $DRIVER_BUILD == dkms || $DRIVER_BUILD == kbuild ]] || die "RESMEM_KMOD_DRIVER='$DRIVER_BUILD': use dkms or kbuild"
DKMS_DEB=$(ls "$SRC"/packaging/resmem-dkms_*_all.deb "$SRC"/bazel-bin/packaging/resmem-dkms_*_all.deb 2>/dev/null | head -1 || true)
[[ $DRIVER_BUILD == kbuild || -r $DKMS_DEB ]] || die "resmem-dkms_*_all.deb not found; run: bazel build //packaging:resmem_dkms_deb"
INIT="$SRC/ci/qemu/guest_init.sh"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/kmod-lane"
rm -rf "$WORK" && mkdir -p "$WORK"
CACHE="${RESMEM_KMOD_CACHE:-/var/cache/resmem-kmod}"
T0=$(date +%s)

# ---- 1. packages ---------------------------------------------------------------------------------
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
[[ -x /bin/busybox && "$(file -b /bin/busybox 2>/dev/null || true)" != *dynamic* ]] || dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
command -v cpio >/dev/null || missing+=(cpio)
command -v modinfo >/dev/null || [[ -x /sbin/modinfo ]] || missing+=(kmod)
[[ -z $HEADERS_PKG ]] || dpkg -s "$HEADERS_PKG" >/dev/null 2>&1 || missing+=("$HEADERS_PKG")
[[ $DRIVER_BUILD == kbuild || -n $BUILDER_SUITE ]] || command -v dkms >/dev/null || missing+=(dkms)
[[ -z $BUILDER_SUITE$USER_BUILDER ]] || command -v debootstrap >/dev/null || missing+=(debootstrap)
# The 32-bit guest program (kmod/tests/resmem_compat32.c) needs a 32-bit libc to link statically.
echo 'int main(void) { return 0; }' | gcc -m32 -static -x c - -o /dev/null 2>/dev/null || missing+=(gcc-multilib)
if ((${#missing[@]})); then
	[[ $(id -u) == 0 ]] || die "missing packages ${missing[*]} and not root: apt-get install ${missing[*]}"
	log "installing ${missing[*]}"
	apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >"$WORK/apt.log" 2>&1 ||
		{ apt-get update -o DPkg::Lock::Timeout=300 >>"$WORK/apt.log" 2>&1 &&
		  apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >>"$WORK/apt.log" 2>&1; } ||
		{ tail -20 "$WORK/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
fi

# ---- 2. the kernel: version from the headers package, and its vmlinuz -----------------------------
BUILDER_ROOT_SH="$SRC/ci/qemu/builder_root.sh"
[[ -r "$BUILDER_ROOT_SH" ]] || die "ci/qemu/builder_root.sh not found beside the lane script"
# shellcheck source=ci/qemu/builder_root.sh
source "$BUILDER_ROOT_SH"
# download_vmlinuz PACKAGE...: the first of the packages apt-get download finds (run in the
# build root, if any), and its vmlinuz of $KVER extracted into $CACHE/boot.
download_vmlinuz() {
	local deb pkg found=
	log "downloading the image of $KVER into $CACHE"
	mkdir -p "$CACHE/boot" "$WORK/image"
	for pkg in "$@"; do
		# shellcheck disable=SC2016 # expanded by the inner shell
		in_builder sh -c 'cd "$1" && apt-get download "$2"' sh "$WORK/image" "$pkg" >>"$WORK/download.log" 2>&1 && { found=$pkg; break; }
	done
	[[ -n $found ]] || { cat "$WORK/download.log" >&2; die "apt-get download $* failed (apt-get update?)"; }
	deb=$(ls -t "$WORK"/image/"$found"_*.deb | head -1)
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$WORK/image" --wildcards '*vmlinuz*' ||
		die "$deb holds no vmlinuz"
	# Debian 12's images keep it as /boot/vmlinuz-VER; Debian 13's 7.x linux-binary-VER as
	# /usr/lib/modules/VER/vmlinuz.
	for deb in "$WORK/image/boot/vmlinuz-$KVER" "$WORK/image/usr/lib/modules/$KVER/vmlinuz"; do
		[[ -r $deb ]] && { cp "$deb" "$CACHE/boot/vmlinuz-$KVER"; return 0; }
	done
	die "$found holds no vmlinuz of $KVER"
}
KBUILD_ARGS=()
if [[ -n $USER_IMAGE ]]; then
	[[ -r "$USER_IMAGE" ]] || die "--kernel $USER_IMAGE is not readable"
	KBUILD=$(readlink -f "$USER_HEADERS")
	# The release the module's vermagic will carry (include/generated/utsrelease.h, UTS_RELEASE).
	KVER=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$KBUILD/include/generated/utsrelease.h" 2>/dev/null)
	[[ -n "$KVER" && -r "$KBUILD/Makefile" ]] ||
		die "--headers $USER_HEADERS has no include/generated/utsrelease.h or Makefile: give a prepared build tree (make modules_prepare) or a headers package's /lib/modules/RELEASE/build"
	VMLINUZ="$USER_IMAGE"
	LANE_NAME="${RESMEM_LANE_NAME:-kmod_lane_${KVER//[^A-Za-z0-9]/_}$PART_SUFFIX}"
	# A KCOV kernel (KCOV_INSTRUMENT_ALL off): instrument the module itself.
	grep -q '^CONFIG_KCOV=y' "$KBUILD/.config" 2>/dev/null && KBUILD_ARGS+=(KCOV_INSTRUMENT=y)
	if [[ -n $USER_BUILDER ]]; then
		# The tree and the source it was built from (an O= tree's `source` link), seen in the root
		# at their own paths.
		BUILDER_SUITE=$USER_BUILDER
		builder_root_ensure "$CACHE/$BUILDER_SUITE-root" "$BUILDER_SUITE" ""
		BUILDER_BINDS=("$KBUILD")
		[[ -L "$KBUILD/source" ]] && BUILDER_BINDS+=("$(readlink -f "$KBUILD/source")")
	fi
elif [[ -n $BUILDER_SUITE ]]; then
	builder_root_ensure "$CACHE/$BUILDER_SUITE-root" "$BUILDER_SUITE" "$KERNEL_LINE"
	KVER=$BUILDER_KVER
	KBUILD="/lib/modules/$KVER/build"
	[[ -r "$BUILDER_ROOT$KBUILD/Makefile" ]] || die "the headers of $KVER are not under $BUILDER_ROOT$KBUILD"
	LANE_NAME="${RESMEM_LANE_NAME:-kmod_lane_${KERNEL_LINE//./_}$PART_SUFFIX}"
	VMLINUZ="$CACHE/boot/vmlinuz-$KVER"
	[[ -r "$VMLINUZ" ]] || download_vmlinuz "linux-binary-$KVER" "linux-image-$KVER-unsigned" "linux-image-$KVER"
else
	KVER=$(dpkg-query -W -f '${Depends}' "$HEADERS_PKG" | grep -o 'linux-headers-[0-9][^ ,|]*-amd64' | head -1 | sed 's/^linux-headers-//')
	[[ -n "$KVER" && -d "/lib/modules/$KVER/build" ]] || die "cannot find the headers of $HEADERS_PKG ($KVER) under /lib/modules/$KVER/build"
	KBUILD="/lib/modules/$KVER/build"
	LANE_NAME="${RESMEM_LANE_NAME:-kmod_lane_${KERNEL_LINE//./_}$PART_SUFFIX}"
	VMLINUZ="/boot/vmlinuz-$KVER"
	if [[ ! -r "$VMLINUZ" ]]; then
		VMLINUZ="$CACHE/boot/vmlinuz-$KVER"
		if [[ ! -r "$VMLINUZ" ]]; then
			log "downloading linux-image-$KVER into $CACHE"
			mkdir -p "$CACHE"
			# 6.1's image package is linux-image-VER; 6.12's is linux-image-VER-unsigned (its signed
			# twin, which its headers depend on, carries the same kernel for Secure Boot).
			(cd "$CACHE" && { apt-get download "linux-image-$KVER" || apt-get download "linux-image-$KVER-unsigned"; } >"$WORK/download.log" 2>&1) ||
				{ cat "$WORK/download.log" >&2; die "apt-get download linux-image-$KVER failed (apt-get update?)"; }
			deb=$(ls -t "$CACHE"/linux-image-"$KVER"*_*.deb | head -1)
			dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$CACHE" "./boot/vmlinuz-$KVER"
		fi
	fi
fi
log "kernel $KVER ($VMLINUZ), modules built against $KBUILD${BUILDER_ROOT:+ in $BUILDER_ROOT}; results as $LANE_NAME"
case "$PART" in
driver) log "the driver's cases: every case but the engine's ($ENGINE_CASES), without the card" ;;
engine) log "the engine's cases in the guest: ${RESMEM_ONLY}" ;;
esac

# ---- 2b. udev for the guest: Debian's own systemd-udevd/udevadm (the udev and libsystemd-shared
# packages of this release, downloaded and extracted like the kernel: installing udev here would
# pull systemd upgrades into the build machine), so kmod/99-resmem.rules is applied by the real
# rule engine, not by a re-implementation of it. Their shared libraries are copied from this
# machine (ldd) into the initramfs.
UDEV="$CACHE/udev"
if [[ ! -x "$UDEV/bin/udevadm" ]]; then
	log "downloading udev and libsystemd-shared into $CACHE/udev"
	mkdir -p "$UDEV" "$CACHE/udev-debs"
	if (cd "$CACHE/udev-debs" && apt-get download udev libsystemd-shared >"$WORK/udev-download.log" 2>&1); then
		for deb in "$CACHE"/udev-debs/*.deb; do dpkg-deb -x "$deb" "$UDEV"; done
	else
		log "apt-get download udev libsystemd-shared failed: the access cases will fail (see below)"
		cat "$WORK/udev-download.log" >&2
	fi
fi

# ---- 3. build the modules ------------------------------------------------------------------------
# Every build with -Werror (KCFLAGS reaches Kbuild through make and dkms alike): a warning on one
# kernel is a failure of that kernel's lane, not a line nobody reads.
export KCFLAGS="${KCFLAGS:+$KCFLAGS }-Werror"
KMOD_SOURCES=("$SRC"/kmod/{Kbuild,Makefile,conftest.sh,resmem.c,resmem_test.c,resmem_edu.c,resmem_edu_p2p.c,nv_p2p_standin.c,nv_p2p_standin.h})
KMOD_UAPI=("$SRC"/kmod/uapi/{resmem_ioctl.h,resmem_edu_ioctl.h,resmem_edu_p2p_ioctl.h,nv_p2p_standin_ioctl.h})
# build_with_dkms: dkms add + build from the package's /usr/src/resmem-VERSION, in a tree of the
# lane's own (--dkmstree/--sourcetree): the machine's /var/lib/dkms and /lib/modules stay as they
# are. Leaves the driver, decompressed, as $WORK/resmem-dkms.ko and sets MAKELOG and DRIVER_ORIGIN.
build_with_dkms() {
	local ko dkms_ver
	dkms_ver=$(dpkg-deb -f "$DKMS_DEB" Version)
	dpkg-deb -x "$DKMS_DEB" "$WORK/dkms-pkg"
	mkdir -p "$WORK/dkms-tree"
	local dkms_args=(-m resmem -v "$dkms_ver" -k "$KVER" --kernelsourcedir "$KBUILD" --dkmstree "$WORK/dkms-tree" --sourcetree "$WORK/dkms-pkg/usr/src")
	# dkms signs what it builds, with a key it makes on first use: keep that key in the lane's tree.
	{ export mok_signing_key="$WORK/dkms-tree/mok.key" mok_certificate="$WORK/dkms-tree/mok.pub"
	  in_builder dkms add "${dkms_args[@]}" && in_builder dkms build "${dkms_args[@]}"; } >"$WORK/dkms.log" 2>&1 ||
		{ cat "$WORK/dkms.log" >&2; find "$WORK/dkms-tree" -name make.log -exec cat {} + >&2; die "dkms build of $(basename "$DKMS_DEB") failed"; }
	ko=$(find "$WORK/dkms-tree/resmem/$dkms_ver/$KVER" -path '*/module/resmem.ko*' | head -1)
	MAKELOG=$(find "$WORK/dkms-tree/resmem/$dkms_ver/$KVER" -name make.log | head -1)
	[[ -r $ko && -r $MAKELOG ]] || { cat "$WORK/dkms.log" >&2; die "dkms build left no module/resmem.ko* or make.log"; }
	# dkms compresses the module as the kernel's config says (6.12: CONFIG_MODULE_COMPRESS_XZ):
	# the guest's busybox insmod loads a plain .ko, so the lane loads what dkms built, decompressed.
	case "$ko" in
	*.ko.xz) xz -dc "$ko" >"$WORK/resmem-dkms.ko" ;;
	*.ko.zst) zstd -qdc "$ko" >"$WORK/resmem-dkms.ko" ;;
	*.ko.gz) gzip -dc "$ko" >"$WORK/resmem-dkms.ko" ;;
	*) cp "$ko" "$WORK/resmem-dkms.ko" ;;
	esac || die "cannot decompress $ko"
	log "dkms built $(basename "$ko")$([[ $ko == *.ko ]] || echo ', decompressed for the guest')"
	if grep -E 'warning:|error:' "$MAKELOG" >&2; then die "dkms's build printed warnings"; fi
	DRIVER_ORIGIN="$(in_builder dkms --version)${BUILDER_ROOT:+ in $BUILDER_SUITE} from $(basename "$DKMS_DEB") ($(grep -m1 'LD \[M\]' "$MAKELOG" | sed 's/^ *//; s/  */ /g'))"
}
# build_modules: Kbuild's four modules (running the feature probes), the 32-bit guest program,
# and the driver by dkms when DRIVER_BUILD is dkms; dies on any failure or warning.
build_modules() {
	mkdir -p "$WORK/kmod/uapi"
	cp "${KMOD_SOURCES[@]}" "$WORK/kmod/"
	cp "${KMOD_UAPI[@]}" "$WORK/kmod/uapi/"
	chmod -R u+w "$WORK/kmod"
	RESMEM_CONFTEST_LOG="$WORK/conftest.log" in_builder make -C "$KBUILD" M="$WORK/kmod" "${KBUILD_ARGS[@]}" modules >"$WORK/kbuild.log" 2>&1 ||
		{ cat "$WORK/kbuild.log" >&2; die "module build failed"; }
	if grep -E 'warning:|error:' "$WORK/kbuild.log" >&2; then die "the module build printed warnings"; fi
	# The 32-bit guest program: a 32-bit process's ioctls take the driver's compat_ioctl path.
	gcc -m32 -static -O2 -Wall -Wextra -Werror -I"$WORK/kmod/uapi" "$SRC/kmod/tests/resmem_compat32.c" \
		-o "$WORK/resmem_compat32" >"$WORK/compat32.log" 2>&1 ||
		{ cat "$WORK/compat32.log" >&2; die "cannot build the 32-bit guest program (gcc -m32, gcc-multilib)"; }
	DRIVER_ORIGIN="kbuild (make -C $KBUILD M=$WORK/kmod${BUILDER_ROOT:+ in $BUILDER_SUITE})"
	MAKELOG=
	if [[ $DRIVER_BUILD == dkms ]]; then build_with_dkms; fi
}
# The lane's build cache (ci/qemu/build_cache.sh), for Debian's lines: both parts of a kernel,
# and the next run after an engine change, build the same modules from the same files, so a build
# that passed is kept in $CACHE/modules/KVER-KEY and copied from there instead of built again
# (docs/build.md "Incremental": 12-17 s a part). KEY covers everything the build reads: the
# module sources, the 32-bit program's, the dkms package, this script, the kernel release, the
# version of its headers package, gcc's and dkms's versions, KCFLAGS and the Kbuild arguments. A
# kernel of your own (--kernel, the debug lane) is always built. RESMEM_KMOD_BUILD_CACHE=0 builds
# anyway.
BUILD_CACHE_SH="$SRC/ci/qemu/build_cache.sh"
[[ -r "$BUILD_CACHE_SH" ]] || die "ci/qemu/build_cache.sh not found beside the lane script"
# shellcheck source=ci/qemu/build_cache.sh
source "$BUILD_CACHE_SH"
# The build's results, as the steps below read them: what an entry holds.
BUILT=(kmod resmem_compat32 conftest.log kbuild.log resmem-dkms.ko dkms-make.log origin.txt)
MODCACHE=
if [[ -n $KERNEL_LINE && "${RESMEM_KMOD_BUILD_CACHE:-1}" != 0 ]]; then
	key_files=("${KMOD_SOURCES[@]}" "${KMOD_UAPI[@]}" "$SRC/kmod/tests/resmem_compat32.c" "$0")
	[[ $DRIVER_BUILD == kbuild ]] || key_files+=("$DKMS_DEB")
	key=$({ printf '%s\n' "$KVER" "$DRIVER_BUILD" "$KCFLAGS" "${KBUILD_ARGS[*]}"
		if [[ -n $BUILDER_ROOT ]]; then
			# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
			in_builder dpkg-query -W -f '${Package} ${Version}\n' "linux-headers-$KVER" 'gcc-[0-9]*' dkms | sort
		else
			dpkg-query -W -f '${Version}\n' "linux-headers-$KVER"; gcc --version | head -1
			[[ $DRIVER_BUILD == kbuild ]] || dkms --version
		fi; } 2>&1 | build_cache_key "${key_files[@]}") ||
		die "cannot read the build's inputs for the build cache's key: ${key_files[*]}"
	MODCACHE="$CACHE/modules/$KVER-$key"
fi
if [[ -n $MODCACHE ]] && made=$(build_cache_take "$MODCACHE" "$WORK" "${BUILT[@]}"); then
	DRIVER_ORIGIN=$(cat "$WORK/origin.txt")
	MAKELOG=
	[[ -e "$WORK/dkms-make.log" ]] && MAKELOG="$WORK/dkms-make.log"
	log "modules from the lane's build cache $MODCACHE: built $made by a run on the same files, headers and compilers (the folder is named after their sha256; RESMEM_KMOD_BUILD_CACHE=0 builds them again)"
else
	build_modules
	if [[ -n $MODCACHE ]]; then
		[[ -n $MAKELOG ]] && cp "$MAKELOG" "$WORK/dkms-make.log"
		echo "$DRIVER_ORIGIN" >"$WORK/origin.txt"
		build_cache_keep "$MODCACHE" "$WORK" 4 "${BUILT[@]}" || log "could not keep the build in $MODCACHE (the next run builds again)"
	fi
fi
DRIVER_KO="$WORK/kmod/resmem.ko"
[[ $DRIVER_BUILD == dkms ]] && DRIVER_KO="$WORK/resmem-dkms.ko"
log "feature probes (kmod/conftest.sh) on $KVER:"
grep -E '^#define RESMEM_HAVE_|^/\* #undef RESMEM_HAVE_' "$WORK/kmod/resmem_conftest.h" | sed 's/^/kmod-lane:   /' >&2
# The lane's host-side cases, "ok|fail<TAB>name<TAB>what", reported beside the guest's.
HOST_CASES="$WORK/host_cases.tsv"
: >"$HOST_CASES"
host_case() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$HOST_CASES"; }
# Each probe must find what this kernel has: the version that added or removed the feature
# (conftest.sh list, docs/kmod.md) says what a mainline kernel of this version answers. On Debian's
# kernels a different answer is a probe that looks in the wrong place (as the old grep of
# pgtable.h missed 6.12's pmd_special): a failure. On a kernel of your own it may be a backport,
# so it is reported and passes.
kver_num=$(grep -oE '^[0-9]+\.[0-9]+' <<<"$KVER")
while IFS=$'\t' read -r name change version what; do
	if grep -q "^#define RESMEM_HAVE_$name " "$WORK/kmod/resmem_conftest.h"; then found=yes; else found=no; fi
	newer=$([[ $(printf '%s\n%s\n' "$version" "$kver_num" | sort -V | head -1) == "$version" ]] && echo yes || echo no)
	if [[ $change == added ]]; then want=$newer; else want=$([[ $newer == yes ]] && echo no || echo yes); fi
	msg="$what: $change in $version; $KVER ($kver_num) should answer $want, the probe found $found"
	if [[ $found == "$want" ]]; then
		host_case ok "conftest_$name" "$msg"
	elif [[ -n $KERNEL_LINE ]]; then
		host_case fail "conftest_$name" "$msg (the probe does not find what this kernel has: kmod/conftest.sh, $WORK/conftest.log)"
	else
		host_case ok "conftest_$name" "$msg (differs from mainline: a backport in this kernel?)"
	fi
done < <("$WORK/kmod/conftest.sh" list)
# `make && make install` (kmod/Makefile) on a tree where all four modules were built installs the
# driver alone: the test modules never leave the lane. The driver part's case (5 s of builds).
check_make_install() {
	local installed
	cp -r "$WORK/kmod" "$WORK/kmod-install"
	if ! in_builder make -C "$WORK/kmod-install" KDIR="$KBUILD" INSTALL_MOD_PATH="$WORK/modinst" install >"$WORK/install.log" 2>&1; then
		host_case fail make_install_installs_only_the_driver "make install failed: $(tail -5 "$WORK/install.log" | tr '\n' ' ')"
		return
	fi
	installed=$(find "$WORK/modinst" -name '*.ko*' -printf '%f\n' | sed 's/\.ko.*//' | sort | tr '\n' ' ')
	if [[ $installed == "resmem " ]]; then
		host_case ok make_install_installs_only_the_driver "make install after building all four modules installed: $installed"
	else
		host_case fail make_install_installs_only_the_driver "make install after building all four modules installed: $installed(want resmem alone)"
	fi
}
[[ $PART == engine ]] || check_make_install
if [[ -n $MAKELOG ]]; then
	log "dkms's build log ($MAKELOG):"
	sed 's/^/kmod-lane:   dkms make.log: /' "$MAKELOG" >&2
fi
# A kernel that trusts a key of its own build tree (the debug kernel: build_debug_kernel.sh) gets
# every module signed with it, so they load where signatures are enforced (the signing boot).
# Debian's header trees have no private key: their modules stay as built (dkms signs its own).
# A tree of the lane's root is read there (in_builder: sign-file is linked against its libraries).
HOST_KBUILD=$KBUILD
[[ -z $BUILDER_ROOT || -n $USER_IMAGE ]] || HOST_KBUILD="$BUILDER_ROOT$KBUILD"
if [[ -r "$HOST_KBUILD/certs/signing_key.pem" && -x "$HOST_KBUILD/scripts/sign-file" ]]; then
	for ko in "$DRIVER_KO" "$WORK/kmod/resmem_test.ko" "$WORK/kmod/resmem_edu.ko" "$WORK/kmod/nv_p2p_standin.ko"; do
		in_builder "$KBUILD/scripts/sign-file" sha256 "$KBUILD/certs/signing_key.pem" "$KBUILD/certs/signing_key.x509" "$ko" ||
			die "sign-file failed on $ko"
	done
	log "modules signed with $KBUILD/certs/signing_key.pem (this kernel trusts it)"
fi
for ko in "$DRIVER_KO" "$WORK/kmod/resmem_test.ko" "$WORK/kmod/resmem_edu.ko" "$WORK/kmod/nv_p2p_standin.ko"; do
	vm=$(/sbin/modinfo -F vermagic "$ko" | awk '{print $1}')
	[[ "$vm" == "$KVER" ]] || die "$ko vermagic '$vm' does not match kernel $KVER"
done
DRIVER_SHA=$(sha256sum "$DRIVER_KO" | awk '{print $1}')
log "modules ready ($(($(date +%s) - T0)) s); resmem.ko by $DRIVER_ORIGIN, sha256 $DRIVER_SHA"

# ---- 4. initramfs --------------------------------------------------------------------------------
R="$WORK/root"
mkdir -p "$R"/{bin,dev,proc,sys,tmp}
cp /bin/busybox "$R/bin/busybox"
cp "$INIT" "$R/init" && chmod 755 "$R/init"
cp "$DRIVER_KO" "$R/resmem.ko" && cp "$WORK/kmod/resmem_test.ko" "$WORK/kmod/resmem_edu.ko" "$WORK/kmod/nv_p2p_standin.ko" "$R/"
echo "$DRIVER_ORIGIN" >"$R/resmem.ko.origin"
cp "$GUEST_BIN" "$R/resmem_guest" && chmod 755 "$R/resmem_guest"
cp "$PROBE_BIN" "$R/resmem_parity_probe" && chmod 755 "$R/resmem_parity_probe"
cp "$SEQ_BIN" "$R/resmem_seq" && chmod 755 "$R/resmem_seq"
cp "$EDU_BIN" "$R/resmem_edu_guest" && chmod 755 "$R/resmem_edu_guest"
cp "$P2P_BIN" "$R/resmem_p2p_guest" && chmod 755 "$R/resmem_p2p_guest"
cp "$WORK/resmem_compat32" "$R/resmem_compat32" && chmod 755 "$R/resmem_compat32"
# The engine's inputs, which --part driver leaves out (ENGINE_CASES):
if [[ $PART != driver ]]; then
	# the resmem command line and the scenarios it runs on the real module (backend kmod);
	cp "$RESMEM_BIN" "$R/resmem" && chmod 755 "$R/resmem"
	mkdir -p "$R/scenarios/kmod" && cp "$SRC"/scenarios/kmod/*.toml "$R/scenarios/kmod/"
	# the seed-003 files (GPUDirect RDMA), which the guest runs on the kmod backend against
	# resmem_edu.ko and the stand-in provider (guest_init.sh seed003_all; their not_applicable.kmod
	# ones as skips);
	mkdir -p "$R/scenarios/seed003" && cp "$SRC"/scenarios/seed003/*.toml "$R/scenarios/seed003/"
	# the card's scenario files (scenarios/card, the card_scenario_* cases) and the guest's side of
	# card_throughput and card_long_run; the card itself is card_device on the host (step 5).
	mkdir -p "$R/scenarios/card" && cp "$SRC"/scenarios/card/*.toml "$R/scenarios/card/"
	cp "$CARD_GUEST_BIN" "$R/card_guest" && chmod 755 "$R/card_guest"
fi
# udev: udevadm (systemd-udevd is a link to it), its libraries and loader, the rule, and the users
# and groups of the access cases: acq (uid 1000) in group resmem, nobody in none of them.
if [[ -x "$UDEV/bin/udevadm" ]]; then
	mkdir -p "$R/lib/systemd" "$R/etc/udev/rules.d" "$R/run" "$R/usr/lib/x86_64-linux-gnu/systemd"
	cp "$UDEV/bin/udevadm" "$R/bin/udevadm"
	ln -sf /bin/udevadm "$R/lib/systemd/systemd-udevd"
	cp "$UDEV"/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-*.so "$R/usr/lib/x86_64-linux-gnu/systemd/"
	LD_LIBRARY_PATH="$UDEV/usr/lib/x86_64-linux-gnu/systemd" ldd "$UDEV/bin/udevadm" |
		awk '/=> \// {print $3} /^\t\/lib64/ {print $1}' | while read -r lib; do
			mkdir -p "$R$(dirname "$lib")" && cp -L "$lib" "$R$lib"
		done
	[[ -e "$R/lib64/ld-linux-x86-64.so.2" ]] || { mkdir -p "$R/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"; }
fi
mkdir -p "$R/etc/udev/rules.d"
cp "$SRC/kmod/99-resmem.rules" "$R/etc/udev/rules.d/99-resmem.rules"
printf 'root:x:0:0:root:/:/bin/sh\nacq:x:1000:1000:acquisition:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\nresmem:x:990:acq\nacq:x:1000:\nnogroup:x:65534:\n' >"$R/etc/group"
printf 'passwd: files\ngroup: files\n' >"$R/etc/nsswitch.conf"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$WORK/initramfs.cpio.gz")

# ---- 5. boot ------------------------------------------------------------------------------------
# What both boots pass the guest: the console, no reboot on panic, and for the debug kernel every
# report counted (kasan_multi_shot) with a log large enough to keep them.
COMMON_APPEND='console=ttyS0 panic=-1 oops=panic_on_warn_off loglevel=4'
[[ -n "${RESMEM_ONLY:-}" ]] && COMMON_APPEND+=" resmem_only=$RESMEM_ONLY"
[[ -n "${RESMEM_SKIP:-}" ]] && COMMON_APPEND+=" resmem_skip=$RESMEM_SKIP"
[[ "${RESMEM_KERNEL_DEBUG:-}" == 1 ]] && COMMON_APPEND+=" resmem_kcheck=1 kasan_multi_shot log_buf_len=16M"
if [[ "${RESMEM_P2P:-1}" == 0 ]]; then
	COMMON_APPEND+=" resmem_p2p=0"
	log "the GPUDirect RDMA and dma-buf cases are left out (RESMEM_P2P=0)"
fi
APPEND="$COMMON_APPEND"
APPEND+=' memmap=64M$0x40000000 memmap=64M$0x44000000 memmap=1G$0x100000000'
APPEND+=' memmap=64M$0xbe000000 memmap=64M$0xc0000000 memmap=64M$0xfc000000'
# Past the end of RAM and of the 64-bit PCI window (0x180000000-0x1ffffffff), with no resource on
# either side: the reservation with nothing behind it, and the ranges that run from it into the
# hole or from the hole into it (guest_init.sh, the c cases).
APPEND+=' memmap=64M$0x300000000'
[[ -n "${RESMEM_SEQ_OPS:-}" ]] && APPEND+=" resmem_seq_ops=$RESMEM_SEQ_OPS"
[[ -n "${RESMEM_SEQ_SEED:-}" ]] && APPEND+=" resmem_seq_seed=$RESMEM_SEQ_SEED"
[[ -n "${RESMEM_SEQ_P2P_OPS:-}" ]] && APPEND+=" resmem_seq_p2p_ops=$RESMEM_SEQ_P2P_OPS"
[[ -n "${RESMEM_FIRST_TOUCH_ROUNDS:-}" ]] && APPEND+=" resmem_first_touch_rounds=$RESMEM_FIRST_TOUCH_ROUNDS"
APPEND+=" resmem_ko_sha256=$DRIVER_SHA"  # the guest checks that /resmem.ko is this file
# Whether pages mode's VMA is VM_MIXEDMAP on this kernel (devmap entries, kernels with pfn_t).
APPEND+=" resmem_pages_vm_mixedmap=$(grep -q '^#define RESMEM_HAVE_PFN_T ' "$WORK/kmod/resmem_conftest.h" && echo 1 || echo 0)"
# A KCOV-instrumented driver: its instrumented sites are its calls of __sanitizer_cov_trace_pc,
# counted from the relocations of every section that stays loaded (not .init.text, freed after
# init); resmem_seq says how many of them its ops reached.
if KCOV_SITES=$(readelf -rW "$DRIVER_KO" | awk '/^Relocation section/ { keep = ($3 !~ /init/) } keep && /__sanitizer_cov_trace_pc/ { n++ } END { print n + 0 }') && ((KCOV_SITES > 0)); then
	log "resmem.ko is KCOV-instrumented: $KCOV_SITES sites"
	APPEND+=" resmem_kcov_sites=$KCOV_SITES"
fi
# QEMU's edu, the DMA producer of the edu cases (kmod/resmem_edu.c, docs/rdma.md): one with a 64-bit
# DMA mask and one with a 32-bit mask (a card that needs its buffer below 4 GiB), at fixed slots so
# that probe order, which dma_bits= follows, is fixed too.
EDU_DEVICES=(-device edu,addr=0x10,dma_mask=0xffffffffffffffff -device edu,addr=0x11,dma_mask=0xffffffff)
# QEMU's ivshmem-plain, 64 MiB of host RAM behind its BAR2: the "GPU memory" and BAR of the stand-in
# provider nv_p2p_standin.ko (the p2p_* and dmabuf_* cases, docs/rdma.md "GPUDirect RDMA in the
# guest"), at a fixed slot next to the edu devices.
EDU_DEVICES+=(-object memory-backend-ram,id=gpumem,size=64M -device ivshmem-plain,memdev=gpumem,addr=0x12)
# boot OUT MEMORY APPEND [QEMU ARGS...]: one TCG boot of the lane's kernel and initramfs with the
# edu devices, its console in OUT; returns QEMU's exit status (124: RESMEM_QEMU_TIMEOUT ran out).
# Defined, with its retry rules, in ci/qemu/boot.sh.
BOOT_SH="$SRC/ci/qemu/boot.sh"
[[ -r "$BOOT_SH" ]] || die "ci/qemu/boot.sh not found beside the lane script"
# shellcheck source=ci/qemu/boot.sh
source "$BOOT_SH"
CONSOLE="$WORK/console.log"
# The card (docs/digitizer.md "In the QEMU guest"): the guest's 5 GiB of RAM in a shared file, and
# card_device on the same file writing into the reservations 0x40000000 and 0x44000000 (QEMU pc with
# -m 5G: 3 GiB below 4 GiB, so file offset = guest-physical there). It writes nothing until the
# guest's card_start asks through the mailbox at 0x40000800, and exits when QEMU's pid is gone.
CARD_ARGS=()
CARD_PID=
CARD_MEM=
card_cleanup() {
	[[ -n $CARD_PID ]] && kill "$CARD_PID" 2>/dev/null && wait "$CARD_PID" 2>/dev/null
	[[ -n $CARD_MEM ]] && rm -f "$CARD_MEM"
	CARD_PID= CARD_MEM=
}
trap card_cleanup EXIT
BOOT_TIMEOUT=${RESMEM_QEMU_TIMEOUT:-900}
if [[ "${RESMEM_CARD:-1}" != 0 ]]; then
	CARD_MEM="/dev/shm/resmem-card-$$-$RANDOM"
	truncate -s 5G "$CARD_MEM" || die "cannot create the guest's RAM file $CARD_MEM (/dev/shm full?)"
	"$CARD_DEVICE_BIN" --mem-file "$CARD_MEM" --ranges '0x40000000:64M,0x44000000:64M' --mailbox 0x40000800 \
		--qemu-pidfile "$WORK/qemu.pid" --report "$WORK/card_device.txt" 2>"$WORK/card_device.log" &
	CARD_PID=$!
	CARD_ARGS=(-object "memory-backend-file,id=m0,size=5G,mem-path=$CARD_MEM,share=on" -machine pc,memory-backend=m0
		-pidfile "$WORK/qemu.pid")
	APPEND+=" resmem_card=1"
	if [[ -n "${RESMEM_CARD_LONG:-}" ]]; then
		APPEND+=" resmem_card_long=$RESMEM_CARD_LONG"
		BOOT_TIMEOUT=$((BOOT_TIMEOUT + RESMEM_CARD_LONG))
	fi
	log "card: card_device (pid $CARD_PID) on the guest's RAM file $CARD_MEM"
fi
# ---- 5b. the IOMMU boot (docs/rdma.md): a q35 guest with intel-iommu runs the edu cases that need
# a translating IOMMU (guest_init.sh, resmem_suite=iommu): DMA through the DMA API works, a DMA to a
# bus address nobody mapped faults. Left out when RESMEM_ONLY names no edu or IOMMU case, or with
# RESMEM_IOMMU_BOOT=0.
# ---- 5c. the module-signing boot (docs/kmod.md "Module signing"): module.sig_enforce=1 and
# lockdown=integrity, as Secure Boot gives on Debian's kernels; the unsigned test build and the
# driver dkms signed with a key this kernel does not trust are refused ("Key was rejected by
# service"), and `resmem doctor` says why and the way out (guest_init.sh, resmem_suite=sig).
# Left out when RESMEM_ONLY names no sig_ case, or with RESMEM_SIG_BOOT=0.
# These two boots run side by side, and beside the first boot once its guest has reached the
# engine's GPUDirect scenarios (the first `# case scenario_seed003_*`: the engine part's last
# group, single-threaded, whose waits on edu's 100 ms DMA timers slept 13-15 s of its 50 s of
# cases). Neither has the card, whose cases time the guest in real time, and no case of theirs
# times anything, so a guest that waits for another's CPU only takes longer. Beside the other
# lanes of a pair (kmod_lane_pair.sh sets RESMEM_LANE_SYNC to a folder and RESMEM_LANE_COUNT) they
# start only when every lane's first boot has reached that group or ended, so that no lane's card
# cases meet them. Otherwise (the driver part, or every case) they start when the first boot
# ends: the random sequences (d_random_sequences_edu_p2p, three threads) once failed with them
# beside its edu and p2p cases. That was the oracle's error, found and fixed since
# (docs/reliability.md, "A third and a fourth time": a write that waited out its allocation's
# FREE), but the driver part's time is not CI's longest path (the asan lane's compiles are), so
# its boots keep to the order the random case has passed in most.
# Their consoles are appended to the first one's in this order, whichever boot ends first; each
# boot prints its own TAP plan.
BOOTS=1
EXTRA_BOOTS=()
EXTRA_PIDS=()
# extra_boot NAME WHAT MEMORY APPEND [QEMU ARGS...]: starts one more boot in the background; its
# console is $CONSOLE.NAME, its exit status and end time (seconds after T0) $WORK/boot-NAME.rc.
extra_boot() {
	local name=$1 what=$2 mem=$3 append=$4
	shift 4
	BOOTS=$((BOOTS + 1))
	EXTRA_BOOTS+=("$name:$what")
	log "booting $KVER again: $what (TCG, -m $mem)"
	(
		set +e
		boot "$CONSOLE.$name" "$mem" "$append" "$@"
		echo "$? $(($(date +%s) - T0))" >"$WORK/boot-$name.rc"
	) &
	EXTRA_PIDS+=($!)
}
start_extra_boots() {
	EXTRAS_STARTED=1
	if [[ "${RESMEM_IOMMU_BOOT:-1}" != 0 ]] && only_may 'edu*' 'p2p*' '*iommu*' 'scenario_seed003*'; then
		# intel_iommu=on, and IOMMU options no kernel of the matrix takes (iommu.passthrough=enable,
		# malformed up to 6.14, is identity domains from 6.15: mock/machine/linux_rules.h; the
		# guest's doctor_iommu_options_ignored checks that the kernel prints what the doctor's model,
		# mock/machine/iommu.h, says it prints: docs/rdma.md "The doctor and the IOMMU").
		IAPPEND="$COMMON_APPEND intel_iommu=on,bogus iommu=on amd_iommu=on iommu.passthrough=pt resmem_suite=iommu"
		IAPPEND+=' memmap=64M$0x40000000 memmap=64M$0x100000000'
		# -m 3G: q35 puts 2 GiB below 4 GiB and 1 GiB at 4 GiB; less memory for kmemleak to scan.
		extra_boot iommu "q35 with intel-iommu" 3G "$IAPPEND" -M q35 -device intel-iommu
	fi
	if [[ "${RESMEM_SIG_BOOT:-1}" != 0 ]] && only_may 'sig*'; then
		SAPPEND="$COMMON_APPEND module.sig_enforce=1 lockdown=integrity resmem_suite=sig"
		SAPPEND+=' memmap=64M$0x40000000'
		extra_boot sig "module.sig_enforce=1 lockdown=integrity" 2G "$SAPPEND"
	fi
}
# The start rule itself (lane_reached, lanes_ready, beside_first_boot): ci/qemu/lane_sync.sh.
LANE_SYNC_SH="$SRC/ci/qemu/lane_sync.sh"
[[ -r "$LANE_SYNC_SH" ]] || die "ci/qemu/lane_sync.sh not found beside the lane script"
# shellcheck source=ci/qemu/lane_sync.sh
source "$LANE_SYNC_SH"
start_beside() {
	log "the first boot is in its GPUDirect scenarios after $(($(date +%s) - T0)) s: the other boots start beside it"
	start_extra_boots
}
EXTRAS_STARTED=
log "booting $KVER (TCG, -m 5G)"
set +e
RESMEM_QEMU_TIMEOUT=$BOOT_TIMEOUT boot "$CONSOLE" 5G "$APPEND" "${CARD_ARGS[@]}" &
MAIN_PID=$!
# Only the engine part's first boot ends in the GPUDirect scenarios: a boot of every case (--part
# all: by hand, the debug kernel's lane) runs the random sequences after them.
[[ $PART != engine ]] || beside_first_boot "$MAIN_PID" "$CONSOLE" '^# case scenario_seed003_' start_beside
wait "$MAIN_PID"
QRC=$?
set -e
lane_reached
if [[ -n $CARD_PID ]]; then
	card_cleanup
	sed 's/^/kmod-lane:   /' "$WORK/card_device.log" | tail -40 >&2
	[[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]] && cp "$WORK/card_device.log" "$TEST_UNDECLARED_OUTPUTS_DIR/"
fi
tr -d '\r' <"$CONSOLE" >"$CONSOLE.txt"
cat "$CONSOLE.txt"
log "qemu exit $QRC after $(($(date +%s) - T0)) s in all"
[[ -n $EXTRAS_STARTED ]] || start_extra_boots

((${#EXTRA_PIDS[@]} == 0)) || wait "${EXTRA_PIDS[@]}"
for b in "${EXTRA_BOOTS[@]}"; do
	name=${b%%:*}
	tr -d '\r' <"$CONSOLE.$name" | tee -a "$CONSOLE.txt"
	read -r brc bend <"$WORK/boot-$name.rc" 2>/dev/null || brc=1 bend=?
	((QRC == 0)) && QRC=$brc
	log "qemu (${b#*:} boot) exit $brc after $bend s in all"
done
[[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]] && cp "$CONSOLE.txt" "$TEST_UNDECLARED_OUTPUTS_DIR/console.log"

# ---- 6. TAP -> JUnit ---------------------------------------------------------------------------
XML="${XML_OUTPUT_FILE:-$WORK/test.xml}"
python3 "$SRC/ci/qemu/tap_junit.py" "$CONSOLE.txt" "$XML" "$QRC" "$PARITY_GOLDEN" "$WORK" "${RESMEM_ONLY:-}" \
	"${TEST_UNDECLARED_OUTPUTS_DIR:-}" "$BOOTS" "$HOST_CASES" "$LANE_NAME" "$KVER"
