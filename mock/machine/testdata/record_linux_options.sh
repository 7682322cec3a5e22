#!/bin/bash
# Records what the QEMU lane's real kernel prints about its memory map for each command line of
# linux-6.1-qemu/cases.tsv ("NAME<TAB>options"), into linux-6.1-qemu/NAME.log: the
# "BIOS-provided"/"BIOS-e820:" lines, each option's "e820: remove/update" and "Malformed early
# option" lines, and the user-defined map (or the panic that replaces it), timestamps removed.
# mock/machine/linux_boot_test.cc (RealLogs.Debian61UnderQemu...) checks Boot() against them.
#
#   mock/machine/testdata/record_linux_options.sh [NAME...]     (default: every case)
#
# Boots vmlinuz-6.1.0-56-amd64 (ci/qemu/kmod_lane.sh downloads it into RESMEM_KMOD_CACHE,
# default /var/cache/resmem-kmod) under TCG with -M pc -m 5G, earlyprintk (early panics print
# before the console is up), ignore_loglevel (the KERN_DEBUG "e820:" lines reach the console
# when the boot dies before /init can run dmesg) and a busybox /init that prints dmesg. About
# 5 s per case; a case whose boot hangs after the map stops at 45 s.
# Needs: qemu-system-x86_64, busybox (static), cpio, python3.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$HERE/linux-6.1-qemu"
KVER=6.1.0-56-amd64
VMLINUZ="${RESMEM_KMOD_CACHE:-/var/cache/resmem-kmod}/boot/vmlinuz-$KVER"
[[ -r "$VMLINUZ" ]] || { echo "record: no $VMLINUZ: run ci/qemu/kmod_lane.sh once" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "record: qemu-system-x86_64 missing" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/root"/{bin,dev,proc,sys,tmp}
cp "$(command -v busybox)" "$WORK/root/bin/busybox"
cat >"$WORK/root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
echo "=====BEGIN====="
dmesg
echo "=====END====="
poweroff -f
INIT
chmod +x "$WORK/root/init"
(cd "$WORK/root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 >"$WORK/init.cpio.gz")
while IFS=$'\t' read -r name options; do
	[[ $# -eq 0 || " $* " == *" $name "* ]] || continue
	cmdline="console=ttyS0 panic=-1 nokaslr earlyprintk=serial,ttyS0,115200 ignore_loglevel $options"
	timeout 45 qemu-system-x86_64 -M pc -m 5G -smp 1 -nographic -no-reboot -kernel "$VMLINUZ" \
		-initrd "$WORK/init.cpio.gz" -append "$cmdline" </dev/null >"$WORK/$name.raw" 2>&1 || true
	python3 - "$WORK/$name.raw" "$OUT/$name.log" "console=ttyS0 panic=-1 nokaslr $options" "$KVER" <<'PY'
import re, sys
raw, out, cmdline, kver = sys.argv[1:]
keep = re.compile(r'^((e820: )?(BIOS-provided|user-defined|extended) physical RAM map:|'
                  r'(BIOS-e820|user|reserve setup_data): .*|e820: (remove|update) .*|'
                  r'Malformed early option.*|mem=nopentium.*|Kernel panic - not syncing: Invalid.*|'
                  r'kernel BUG at.*)$')
ts = re.compile(r'^\[ *[0-9.]+\] ')
text = open(raw, encoding='latin-1').read().replace('\r', '')
src = text.split('=====BEGIN=====')[1].split('=====END=====')[0] if '=====BEGIN=====' in text else text
lines, after_user = [], False
for l in src.split('\n'):
    i = l.find('Kernel panic - not syncing')
    if i > 0 and '[' in l[:i]:
        l = l[l.index('['):]          # early_printk's copy runs into the printk line
    l = ts.sub('', l)
    if l.startswith('Kernel command line:') or l.startswith('e820: update [mem 0x00000000-0x00000fff]'):
        break                          # the kernel's own later edits start here
    if keep.match(l):
        if after_user and not l.startswith('user: '):
            break
        after_user = after_user or l.startswith('user-defined')
        if l not in lines or not l.startswith('Kernel panic'):
            lines.append(l)
    elif after_user:
        break
with open(out, 'w') as f:
    f.write('# cmdline: %s\n' % cmdline)
    f.write("# kernel: %s (Debian 6.1.192-2), the QEMU lane's kernel, qemu-system-x86_64 -M pc -m 5G, TCG\n" % kver)
    f.write("# lines: the kernel's memory-map lines as printed (dmesg, or the serial console with "
            "ignore_loglevel where the boot died first), timestamps removed, up to the user map\n")
    f.write('\n'.join(lines) + '\n')
PY
	echo "record: $name: $(grep -vc '^#' "$OUT/$name.log") lines"
done <"$OUT/cases.tsv"
