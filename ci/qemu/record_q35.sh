#!/bin/bash
# Records what a real QEMU q35 machine shows its guest, verbatim, for the machine files of the
# simulator (mock/machine/captures/qemu-q35-2g and qemu-q35-5g; `resmem import` reads them).
#
#   ci/qemu/record_q35.sh [--out DIR] [--only 2g|5g] [--machine q35|pc]
#     --out DIR   where the capture folders go (default mock/machine/captures)
#     --only X    record one machine only
#     --machine M  QEMU machine type (default q35; `pc` records QEMU's default i440FX machine
#                 into qemu-pc-2g/qemu-pc-5g, for comparing with the q35 captures)
#
# It boots the QEMU lane's kernel (Debian 6.1, the vmlinuz of the linux-image package whose
# version linux-headers-amd64 names: ci/qemu/kmod_lane.sh) under TCG with `-M q35` and a busybox
# initramfs whose /init prints each source between markers, then powers off. One file per source:
#   dmesg-e820.txt     dmesg's "BIOS-e820:" lines, the "user-defined physical RAM map" and its
#                      "user:" lines, "e820: update"/"e820: remove" and the MTRR/PAT lines
#   dmesg.txt          the whole kernel log (for the lines a later reader wants)
#   iomem.txt          /proc/iomem read as root
#   firmware-memmap.txt  `grep . /sys/firmware/memmap/*/*` (the firmware's map before memmap=)
#   mtrr.txt           /proc/mtrr
#   cmdline.txt        /proc/cmdline
#   cpuinfo-address-sizes.txt  /proc/cpuinfo's "address sizes" line (one CPU)
#   meminfo.txt        /proc/meminfo
#   qemu.txt           the QEMU command line and version that produced the capture
# The reservations on the command line are the lane's kind: 64 MiB at 1 GiB (low RAM) and, with
# 5 GiB, 1 GiB above 4 GiB; neither touches a hole, so the firmware's map is what the machine has.
# nokaslr keeps the kernel at one physical address, so two recordings differ only in dmesg's
# timestamps and /proc/meminfo's live counters (the firmware map, e820, iomem, mtrr are equal).
# Needs: qemu-system-x86, busybox-static, cpio, the kernel (the lane downloads it into
# RESMEM_KMOD_CACHE, default /var/cache/resmem-kmod). Takes about 10 s per machine.
set -euo pipefail

log() { echo "record-q35: $*" >&2; }
die() { echo "record-q35: ERROR: $*" >&2; exit 1; }

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="$SRC/mock/machine/captures"
ONLY=""
MACHINE=q35
while (($#)); do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--machine) MACHINE=$2; shift 2 ;;
	-h | --help) sed -n '2,29p' "$0"; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done
case "$ONLY" in "" | 2g | 5g) ;; *) die "--only takes 2g or 5g, not '$ONLY'" ;; esac
case "$MACHINE" in q35 | pc) ;; *) die "--machine takes q35 or pc, not '$MACHINE'" ;; esac

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: apt-get install qemu-system-x86"
command -v cpio >/dev/null || die "cpio missing: apt-get install cpio"
[[ -x /bin/busybox && "$(file -b /bin/busybox)" != *dynamic* ]] || die "/bin/busybox is not static: apt-get install busybox-static"
KVER=$(dpkg-query -W -f '${Depends}' linux-headers-amd64 2>/dev/null | grep -o 'linux-headers-[0-9][^ ,]*-amd64' | head -1 | sed 's/^linux-headers-//')
[[ -n "$KVER" ]] || die "linux-headers-amd64 is not installed: it names the lane's kernel version"
CACHE="${RESMEM_KMOD_CACHE:-/var/cache/resmem-kmod}"
VMLINUZ="/boot/vmlinuz-$KVER"
[[ -r "$VMLINUZ" ]] || VMLINUZ="$CACHE/boot/vmlinuz-$KVER"
[[ -r "$VMLINUZ" ]] || die "no vmlinuz-$KVER in /boot or $CACHE/boot: run ci/qemu/kmod_lane.sh once (it downloads it)"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R="$WORK/root"
mkdir -p "$R"/{bin,dev,proc,sys,tmp}
cp /bin/busybox "$R/bin/busybox"
cat >"$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
section() { echo "=====BEGIN $1====="; cat; echo "=====END $1====="; }
dmesg | section dmesg
cat /proc/iomem | section iomem
(cd /sys/firmware/memmap && grep . */*) | section firmware-memmap
cat /proc/mtrr | section mtrr
cat /proc/cmdline | section cmdline
grep -m1 '^address sizes' /proc/cpuinfo | section cpuinfo-address-sizes
cat /proc/meminfo | section meminfo
echo "=====DONE====="
poweroff -f
INIT
chmod 755 "$R/init"
mknod "$R/dev/console" c 5 1 2>/dev/null || true
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$WORK/initramfs.cpio.gz")

record() {  # record NAME MEM APPEND_EXTRA
	local name=$1 mem=$2 extra=$3
	local dir="$OUT/$name"
	local append="console=ttyS0 panic=-1 loglevel=1 nokaslr $extra"
	local cmd=(qemu-system-x86_64 -M "$MACHINE" -accel tcg -cpu max -m "$mem" -smp 1 -no-reboot
		-display none -serial stdio -monitor none -kernel "$VMLINUZ"
		-initrd "$WORK/initramfs.cpio.gz" -append "$append")
	log "booting $name: ${cmd[*]}"
	timeout 300 "${cmd[@]}" </dev/null >"$WORK/$name.console" 2>&1 || die "qemu failed for $name (see $WORK/$name.console)"
	tr -d '\r' <"$WORK/$name.console" >"$WORK/$name.log"
	grep -q '^=====DONE=====$' "$WORK/$name.log" || { tail -30 "$WORK/$name.log" >&2; die "$name: the guest never finished its captures"; }
	mkdir -p "$dir"
	for s in dmesg iomem firmware-memmap mtrr cmdline cpuinfo-address-sizes meminfo; do
		awk -v s="$s" '$0 == "=====BEGIN " s "=====" {on=1; next} $0 == "=====END " s "=====" {on=0} on' \
			"$WORK/$name.log" >"$dir/$s.txt"
		[[ -s "$dir/$s.txt" ]] || die "$name: the guest printed nothing for $s"
	done
	# The map lines as dmesg prints them (what `resmem import` reads from a user's paste).
	grep -E 'BIOS-e820:|user-defined physical RAM map|\] user: |e820: (update|remove)|MTRR|x86/PAT|last_pfn|Memory: [0-9]' \
		"$dir/dmesg.txt" >"$dir/dmesg-e820.txt"
	{
		echo "# Recorded by ci/qemu/record_q35.sh on $(date -u +%Y-%m-%d)"
		qemu-system-x86_64 --version | head -1
		echo "kernel: vmlinuz-$KVER ($(dpkg-query -W -f '${Version}' "linux-headers-$KVER" 2>/dev/null || echo '?'))"
		printf '%q ' "${cmd[@]}" | sed "s|$WORK/||g"
		echo
	} >"$dir/qemu.txt"
	log "$name: $(wc -l <"$dir/dmesg-e820.txt") map lines, $(wc -l <"$dir/iomem.txt") iomem lines -> $dir"
}

# 2 GiB: all RAM fits below q35's PCI hole; 5 GiB: q35 puts 2 GiB below 4 GiB and the rest above
# (pc: 3 GiB below).
if [[ -z "$ONLY" || "$ONLY" == 2g ]]; then record "qemu-$MACHINE-2g" 2G 'memmap=64M$0x40000000'; fi
if [[ -z "$ONLY" || "$ONLY" == 5g ]]; then record "qemu-$MACHINE-5g" 5G 'memmap=64M$0x40000000 memmap=1G$0x100000000'; fi
log "done"
