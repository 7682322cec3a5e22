#!/bin/bash
# The kmod lane under the debug kernel (Bazel: //ci/qemu:kmod_lane_debug_test; docs/reliability.md
# "Debug kernel"): the whole guest suite of ci/qemu/kmod_lane.sh, booted on the kernel that
# ci/qemu/build_debug_kernel.sh built and cached (KASAN, lockdep, DEBUG_VM, kmemleak, KCOV), the
# modules built against that kernel's build tree, and every guest case failed by any KASAN,
# lockdep, DEBUG_VM, WARN or kmemleak report it caused (guest_init.sh kcheck). The random syscall
# sequences run RESMEM_SEQ_OPS operations in each of their two cases (default 30,000: 60,000 a run).
# When the cache is not there the lane does not build it (10-20 minutes of 2 cores): it
# reports one skipped case with the reason and the command that builds it, and exits 0.
# Usage: ci/qemu/kmod_lane_debug.sh [--kernel-line 6.1|7.3]   (default 6.1: the lane's default
# kernel; 7.3: the backports kernel, whose folio-based pages mode 6.1 cannot check, its modules
# built in the lane's trixie root; results as kmod_lane_debug_7_3)
# Environment: as kmod_lane.sh; RESMEM_DEBUG_KERNEL_CACHE (default /root/.cache/resmem-debug-kernel).
set -euo pipefail

LINE=6.1
case "${1:-}" in
'') ;;
--kernel-line) LINE=${2:?--kernel-line needs 6.1 or 7.3} ;;
*) echo "kmod-lane-debug: ERROR: unknown argument '$1': use [--kernel-line 6.1|7.3]" >&2; exit 2 ;;
esac
case "$LINE" in
6.1 | 7.3) ;;
*) echo "kmod-lane-debug: ERROR: --kernel-line $LINE: the debug kernel is made for the lane's 6.1 and 7.3 (ci/qemu/build_debug_kernel.sh)" >&2; exit 2 ;;
esac
NAME=kmod_lane_debug
[[ $LINE == 6.1 ]] || NAME="kmod_lane_debug_${LINE//./_}"

if [[ -n "${TEST_SRCDIR:-}" ]]; then
	SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"
else
	SRC="$(cd "$(dirname "$0")/../.." && pwd)"
fi
if ENTRY=$("$SRC/ci/qemu/build_debug_kernel.sh" --kernel-line "$LINE" --print-dir); then
	echo "kmod-lane-debug: debug kernel $(cat "$ENTRY/kernelrelease" 2>/dev/null) from $ENTRY (built in $(cat "$ENTRY/build-seconds" 2>/dev/null || echo '?') s)" >&2
	export RESMEM_KERNEL_IMAGE="$ENTRY/bzImage" RESMEM_KERNEL_BUILD="$ENTRY/build" RESMEM_KERNEL_DEBUG=1
	export RESMEM_LANE_NAME=$NAME
	# A tree built in the lane's root of a newer Debian (7.3): its modules are built there too.
	if [[ -r "$ENTRY/builder-suite" ]]; then
		RESMEM_KERNEL_BUILDER=$(cat "$ENTRY/builder-suite")
		export RESMEM_KERNEL_BUILDER
	fi
	export RESMEM_SEQ_OPS="${RESMEM_SEQ_OPS:-30000}"
	# The driver built with Kbuild against the debug kernel's tree (dkms, the normal lane's way,
	# looks for /lib/modules/RELEASE/build, which this kernel does not have).
	export RESMEM_KMOD_DRIVER="${RESMEM_KMOD_DRIVER:-kbuild}"
	# 3,300 s was not enough once the signing cases and the concurrent edu/P2P sequences joined: on
	# the 2-core build machine, loaded by builds, the main boot reached case 89 of about 140 in
	# 3,315 s (2026-11-28). The lane is not part of `bazel test //...` (BUILD: manual); run it
	# alone, or with bazel test --test_timeout=7200.
	export RESMEM_QEMU_TIMEOUT="${RESMEM_QEMU_TIMEOUT:-6600}"
	# The concurrent edu/P2P sequences: 1,500 operations take about 40 s in a normal guest; under
	# KASAN and kmemleak scans several times that.
	export RESMEM_SEQ_P2P_OPS="${RESMEM_SEQ_P2P_OPS:-500}"
	# The IOMMU boot (a second guest, edu behind intel-iommu) is left to the normal lane here: with
	# it the debug lane ran past Bazel's 3600 s limit on the loaded build machine (first boot
	# 2,885 s, 2026-11-23). RESMEM_IOMMU_BOOT=1 runs it under the debug kernel too.
	export RESMEM_IOMMU_BOOT="${RESMEM_IOMMU_BOOT:-0}"
	# The GPUDirect RDMA and dma-buf cases (about 25, with the races of cudaFree against unpins,
	# transfers, close and mmap) run here by default: a use-after-free in them shows only under
	# KASAN (docs/reliability.md). Each case adds a kmemleak scan of about 20 s (about 9 minutes),
	# and the first boot took 2,885 s of the 3,300 s QEMU gets with 100,000 sequence operations:
	# hence 30,000 a case below. RESMEM_P2P=0 leaves them out.
	export RESMEM_P2P="${RESMEM_P2P:-1}"
	exec "$SRC/ci/qemu/kmod_lane.sh"
fi
REASON="the debug kernel is not built for this lane's $LINE kernel and config (no cache entry under ${RESMEM_DEBUG_KERNEL_CACHE:-/root/.cache/resmem-debug-kernel}); build it once with: ci/qemu/build_debug_kernel.sh --kernel-line $LINE (10-20 minutes on 2 cores; the lane itself about an hour: docs/reliability.md)"
echo "kmod-lane-debug: SKIPPED: $REASON" >&2
python3 "$SRC/ci/qemu/junit_case.py" "${XML_OUTPUT_FILE:-/dev/null}" "$NAME" "$NAME" \
	"$NAME" skip "$REASON"
exit 0
