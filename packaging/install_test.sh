#!/usr/bin/env bash
# //packaging:install_test_dkms and :install_test_tools: installs the packages it is given (resmem-dkms,
# resmem, or both) on this machine for real, checks what each promised, purges them and checks that
# nothing is left (docs/build.md, "Packages"). Neither package depends on the other (Recommends,
# Suggests), so each is tested alone: a change to the command line reinstalls only resmem, and
# dkms's builds (most of the time) run again only when the driver's package changes.
#   resmem-dkms: dpkg -i, with Debian's two kernel lines' headers installed (6.1: linux-headers-amd64,
#   6.12: linux-headers-6.12-amd64) and a third, made-up kernel tree of a release the driver does
#   support yet (7.4, after the newest line the QEMU lane runs: dkms.conf BUILD_EXCLUSIVE_KERNEL); dkms (through the package's postinst)
#   adds, builds and installs the module for each supported kernel (never `uname -r`: the build
#   machine runs another kernel) and skips the unsupported one without failing the install;
#   dkms's own make.log of each goes into this log; each installed .ko has its kernel's vermagic;
#   modprobe parses the modprobe.d example.
#   resmem: the udev rule is run by `udevadm test` against a misc device named resmem0 (below);
#   /usr/bin/resmem --version; a man page per command of `resmem --help`; the LD_PRELOAD shim
#   loads.
#   Then dpkg --purge and none of the packages' files remains, nor /var/lib/dkms/resmem, the
#   installed .ko and the depmod entry (resmem-dkms), nor the group (resmem). Loading the module is
#   the QEMU lanes' job (//ci/qemu:kmod_lane_*).
# The udev check: systemd 252 (bookworm) has no `udevadm verify` (it came in 253); its strongest
# check is `udevadm test`, which parses every rules file (complaints name file:line) and runs the
# rules against a device, applying owner and mode to its node for real. So it runs in a private
# mount namespace (unshare -m) with a stand-in sysfs entry /sys/devices/virtual/misc/resmem0
# (what misc_register makes: subsystem misc, MAJOR/MINOR/DEVNAME in uevent; sd-device accepts a
# non-sysfs path with SYSTEMD_DEVICE_VERIFY_SYSFS=0), a private /dev and /run: the test checks
# the node udevadm set (group resmem, 0660) and the host's /dev and /run/udev are not touched.
# Needs root and dpkg; without them every case reports "skipped" with the reason in the JUnit XML.
# Installs dkms and both kernel lines' headers (resmem-dkms), udev (resmem) when missing, as the
# QEMU lanes install them.
# Usage: install_test.sh DEB...   (resmem-dkms_VERSION_all.deb and/or resmem_VERSION_amd64.deb)
set -uo pipefail

T=${TEST_TMPDIR:-$(mktemp -d)}
XML=${XML_OUTPUT_FILE:-$T/test.xml}
RESULTS="$T/results.tsv"
: >"$RESULTS"
# The kernel lines whose headers the test installs (Debian bookworm's), as in ci/qemu/kmod_lane.sh.
LINES=(6.1 6.12)
declare -A HEADERS_PKG=([6.1]=linux-headers-amd64 [6.12]=linux-headers-6.12-amd64)
# A release dkms.conf's BUILD_EXCLUSIVE_KERNEL leaves out (after 7.3, the newest line the QEMU lane
# runs): a made-up tree of it under /lib/modules, which the postinst must skip, not fail on.
UNSUPPORTED_KVER=7.4.0-resmem-install-test
DKMS_CASES=(dkms_installed_6_1 dkms_installed_6_12 dkms_build_log_6_1 dkms_build_log_6_12
	module_vermagic_6_1 module_vermagic_6_12 dkms_skips_unsupported_kernel modprobe_example_parses)
TOOLS_CASES=(udev_rule_udevadm_test cli_version_from_usr_bin man_pages preload_shim_loads)

log() { echo "install-test: $*"; }
# record NAME ok|fail|skip MESSAGE
record() { printf '%s\t%s\t%s\n' "$1" "$2" "${3//$'\n'/ }" >>"$RESULTS"; log "$2 $1${3:+: $3}"; }
write_xml() {
	python3 - "$RESULTS" "$XML" "$(basename "${TEST_TARGET:-install_test}")" <<'PY'
import html, sys
rows = [l.rstrip("\n").split("\t", 2) for l in open(sys.argv[1]) if l.strip()]
fail = sum(1 for r in rows if r[1] == "fail")
skip = sum(1 for r in rows if r[1] == "skip")
with open(sys.argv[2], "w") as f:
    f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="%s" '
            'tests="%d" failures="%d" skipped="%d">\n' % (html.escape(sys.argv[3]), len(rows), fail, skip))
    for name, status, msg in rows:
        f.write('<testcase name="%s" classname="packaging">' % html.escape(name))
        if status == "fail":
            f.write('<failure message="%s"/>' % html.escape(msg))
        elif status == "skip":
            f.write('<skipped message="%s"/>' % html.escape(msg))
        f.write("<system-out>%s</system-out></testcase>\n" % html.escape(msg))
    f.write("</testsuite></testsuites>\n")
PY
}
finish() {
	write_xml
	local fails
	fails=$(awk -F'\t' '$2 == "fail"' "$RESULTS" | wc -l)
	log "$(wc -l <"$RESULTS") cases, $fails failed, $(awk -F'\t' '$2 == "skip"' "$RESULTS" | wc -l) skipped"
	exit $((fails > 0))
}
skip_all() {
	local c
	for c in "${CASES[@]}"; do record "$c" skip "skipped: $1"; done
	finish
}

# What the arguments hold: the cases are those of the packages given (skip_all reports them).
(($# > 0)) || { record dpkg_install fail "no package given (usage: install_test.sh DEB...)"; finish; }
DEBS=() PKGS=() DKMS_DEB="" TOOLS_DEB=""
for a in "$@"; do
	deb=$(readlink -f "$a")
	[[ -r $deb ]] || { record dpkg_install fail "package not found: $a (bazel build //packaging:debs)"; finish; }
	DEBS+=("$deb")
	case "$(basename "$deb")" in
	resmem-dkms_*.deb) DKMS_DEB=$deb PKGS+=(resmem-dkms) ;;
	resmem_*.deb) TOOLS_DEB=$deb PKGS+=(resmem) ;;
	*) record dpkg_install fail "$a is neither resmem-dkms_*.deb nor resmem_*.deb"; finish ;;
	esac
done
CASES=(dpkg_install)
[[ -n $DKMS_DEB ]] && CASES+=("${DKMS_CASES[@]}")
[[ -n $TOOLS_DEB ]] && CASES+=("${TOOLS_CASES[@]}")
CASES+=(dpkg_purge nothing_left_after_purge)

[[ $(id -u) == 0 ]] || skip_all "not root (dpkg -i and dkms install need root; CI runs as root)"
command -v dpkg >/dev/null && command -v dpkg-deb >/dev/null || skip_all "no dpkg (not a Debian machine)"
VERSION=$(dpkg-deb -f "${DEBS[0]}" Version)
for deb in "${DEBS[@]}"; do
	[[ $(dpkg-deb -f "$deb" Version) == "$VERSION" ]] || { record dpkg_install fail "the packages' versions differ"; finish; }
done

# dpkg takes a lock; another install on the machine (ci/setup.sh, the QEMU lane) may hold it.
dpkg_waiting() {
	local out i
	for i in $(seq 60); do
		out=$(DEBIAN_FRONTEND=noninteractive dpkg "$@" 2>&1) && { echo "$out"; return 0; }
		grep -q 'lock' <<<"$out" || { echo "$out"; return 1; }
		sleep 5
	done
	echo "$out"; return 1
}

for p in "${PKGS[@]}"; do
	if dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q installed; then
		record dpkg_install fail "$p is already installed here; this test would remove it (dpkg --purge $p first)"
		finish
	fi
done

# ---- what the test needs: dkms and the lanes' kernel headers (resmem-dkms), udevadm (resmem) -----
missing=()
if [[ -n $DKMS_DEB ]]; then
	command -v dkms >/dev/null || missing+=(dkms)
	for line in "${LINES[@]}"; do
		dpkg -s "${HEADERS_PKG[$line]}" >/dev/null 2>&1 || missing+=("${HEADERS_PKG[$line]}")
	done
fi
[[ -z $TOOLS_DEB ]] || command -v udevadm >/dev/null || missing+=(udev)
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
	DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" >"$T/apt.log" 2>&1 ||
		{ apt-get update -q -o DPkg::Lock::Timeout=300 >>"$T/apt.log" 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" >>"$T/apt.log" 2>&1; } ||
		{ tail -20 "$T/apt.log"; record dpkg_install fail "apt-get install ${missing[*]} failed"; finish; }
fi
declare -A KVER_OF=()
[[ -n $DKMS_DEB ]] || LINES=()  # the kernels matter to the driver's package alone
for line in "${LINES[@]}"; do
	k=$(dpkg-query -W -f '${Depends}' "${HEADERS_PKG[$line]}" | grep -o 'linux-headers-[0-9][^ ,|]*-amd64' | head -1 | sed 's/^linux-headers-//')
	[[ -n $k && -d /lib/modules/$k/build ]] ||
		{ record dpkg_install fail "no headers of ${HEADERS_PKG[$line]} ('$k') under /lib/modules/$k/build"; finish; }
	KVER_OF[$line]=$k
done
KVERS=("${KVER_OF[@]}")
log "${PKGS[*]} $VERSION$([[ -n $DKMS_DEB ]] && echo ", kernel headers ${KVERS[*]}") (this machine runs $(uname -r))"

# Regular files and links of the packages (their directories, such as /usr/bin, are shared).
PKG_FILES=$(for d in "${DEBS[@]}"; do dpkg-deb -c "$d"; done | awk '$1 !~ /^d/ {print substr($6, 2)}')

# What the install makes that belongs to dkms and depmod, not to resmem: dkms's signing key pair
# (made on its first build on a machine) and depmod's index of the kernel. Put back as found.
before_state() {
	local k
	ls -1 /var/lib/dkms 2>/dev/null | sed 's|^|/var/lib/dkms/|'
	for k in ${KVERS[@]+"${KVERS[@]}"}; do ls -1d "/lib/modules/$k"/modules.* 2>/dev/null; done
}
before_state | sort >"$T/before.txt"

cleanup() {
	local p
	for p in "${PKGS[@]}"; do
		if dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed\|config-files\|half'; then
			log "cleanup: dpkg --purge $p"
			dpkg_waiting --purge "$p" >/dev/null || log "cleanup: dpkg --purge $p failed"
		fi
	done
	before_state | sort | comm -13 "$T/before.txt" - | while read -r f; do
		case "$f" in /var/lib/dkms/mok.key | /var/lib/dkms/mok.pub | /lib/modules/*/modules.*)
			rm -f "$f" ;;
		esac
	done
	rm -rf "/lib/modules/$UNSUPPORTED_KVER"
	return 0
}
trap 'cleanup' EXIT
trap 'exit 1' INT TERM

# ---- the unsupported kernel: what the postinst checks for a kernel with headers -----------------
# (/usr/lib/dkms/common.postinst _check_kernel_dir: include/, Makefile, .config, scripts/ under
# /lib/modules/RELEASE/build); dkms decides from the release alone that it cannot build there.
rm -rf "/lib/modules/$UNSUPPORTED_KVER"  # a killed earlier run's (the name is this test's own)
if [[ -n $DKMS_DEB ]]; then
	mkdir -p "/lib/modules/$UNSUPPORTED_KVER/build"/{include,scripts}
	printf '# a made-up kernel tree of //packaging:install_test_dkms\n' >"/lib/modules/$UNSUPPORTED_KVER/build/Makefile"
	: >"/lib/modules/$UNSUPPORTED_KVER/build/.config"
fi

# ---- install -------------------------------------------------------------------------------------
if out=$(dpkg_waiting -i "${DEBS[@]}"); then
	echo "$out" >"$T/dpkg-install.log"
	echo "$out" | sed 's/^/  dpkg: /'
	record dpkg_install ok "dpkg -i ${DEBS[*]##*/}"
else
	echo "$out" | sed 's/^/  dpkg: /'
	record dpkg_install fail "dpkg -i failed (output above)"
fi

# ---- resmem-dkms: status, dkms's own build log and the installed module, for each kernel; the
# unsupported kernel skipped; the modprobe.d example ------------------------------------------------
check_dkms() {
	local line KVER tag status MAKELOG ld KO vermagic dep shown EXAMPLE
	for line in "${LINES[@]}"; do
		KVER=${KVER_OF[$line]}
		tag=${line//./_}
		status=$(dkms status -m resmem -v "$VERSION" -k "$KVER" 2>/dev/null)
		log "dkms status ($KVER): $status"
		if grep -q "^resmem/$VERSION, $KVER, [^:]*: installed" <<<"$status"; then
			record "dkms_installed_$tag" ok "$status"
		else
			record "dkms_installed_$tag" fail "dkms status for $KVER: '$status' (want 'resmem/$VERSION, $KVER, ARCH: installed')"
		fi
		MAKELOG=$(find "/var/lib/dkms/resmem/$VERSION/$KVER" -name make.log 2>/dev/null | head -1)
		if [[ -n $MAKELOG ]]; then
			log "dkms's build log, $MAKELOG:"
			sed 's/^/  dkms make.log: /' "$MAKELOG"
			ld=$(grep -m1 'LD \[M\].*/resmem\.ko' "$MAKELOG")
			if head -1 "$MAKELOG" | grep -q "^DKMS make.log for resmem-$VERSION for kernel $KVER" && [[ -n $ld ]] &&
				! grep -qE 'error:|warning:' "$MAKELOG"; then
				record "dkms_build_log_$tag" ok "$(head -1 "$MAKELOG"): ${ld#"${ld%%[! ]*}"}"
			else
				record "dkms_build_log_$tag" fail "$MAKELOG lacks the header for $KVER or the LD [M] resmem.ko line, or has warnings/errors"
			fi
		else
			record "dkms_build_log_$tag" fail "no make.log under /var/lib/dkms/resmem/$VERSION/$KVER (dkms did not build)"
		fi
		# 6.12's config compresses modules (CONFIG_MODULE_COMPRESS_XZ): dkms installs resmem.ko.xz there.
		KO=$(ls "/lib/modules/$KVER/updates/dkms"/resmem.ko* 2>/dev/null | head -1)
		if [[ -n $KO ]]; then
			vermagic=$(/sbin/modinfo -F vermagic "$KO" | awk '{print $1}')
			dep=$(grep -m1 'updates/dkms/resmem.ko' "/lib/modules/$KVER/modules.dep" 2>/dev/null)
			if [[ $vermagic == "$KVER" && -n $dep ]]; then
				record "module_vermagic_$tag" ok "$KO: vermagic $vermagic, modules.dep '$dep'"
			else
				record "module_vermagic_$tag" fail "$KO: vermagic '$vermagic' (want $KVER), modules.dep entry '$dep'"
			fi
		else
			record "module_vermagic_$tag" fail "no resmem.ko under /lib/modules/$KVER/updates/dkms"
		fi
	done
	status=$(dkms status -m resmem -v "$VERSION" -k "$UNSUPPORTED_KVER" 2>&1)
	if grep -q "Building for .*$UNSUPPORTED_KVER" "$T/dpkg-install.log" && grep -q "Skipped" "$T/dpkg-install.log" &&
		! compgen -G "/lib/modules/$UNSUPPORTED_KVER/updates/dkms/resmem.ko*" >/dev/null; then
		record dkms_skips_unsupported_kernel ok "the postinst tried $UNSUPPORTED_KVER and skipped it (BUILD_EXCLUSIVE_KERNEL); dpkg -i went on; dkms status: '${status:-nothing}'"
	else
		record dkms_skips_unsupported_kernel fail "the postinst's output does not show $UNSUPPORTED_KVER tried and skipped (see the dpkg lines above); dkms status: '$status'"
	fi

	EXAMPLE=/usr/share/doc/resmem-dkms/examples/resmem.modprobe.conf
	if shown=$(/sbin/modprobe -C "$EXAMPLE" --showconfig 2>&1) && grep -q '^options resmem ranges=' <<<"$shown"; then
		record modprobe_example_parses ok "modprobe -C $EXAMPLE --showconfig: $(grep -m1 '^options resmem' <<<"$shown")"
	else
		record modprobe_example_parses fail "modprobe -C $EXAMPLE --showconfig shows no 'options resmem': $shown"
	fi
}

# ---- resmem: the udev rule through udevadm test, in a private mount namespace --------------------
check_udev_rule() {
	local RULE urc node complaints
	RULE=/lib/udev/rules.d/99-resmem.rules
	if [[ -f $RULE ]]; then
		unshare -m --propagation private bash -c '
			set -e
			mount -t tmpfs none /run
			mount -t tmpfs none /dev
			mount -t tmpfs none /sys/devices/virtual/misc
			d=/sys/devices/virtual/misc/resmem0
			mkdir "$d"
			printf "MAJOR=10\nMINOR=250\nDEVNAME=resmem0\n" >"$d/uevent"
			echo 10:250 >"$d/dev"
			ln -s ../../../../class/misc "$d/subsystem"
			mknod -m 0600 /dev/resmem0 c 10 250
			SYSTEMD_DEVICE_VERIFY_SYSFS=0 udevadm test --action=add "$d" >'"$T"'/udevadm.log 2>&1
			stat -c "%G %a" /dev/resmem0 >'"$T"'/node.txt
		' >"$T/unshare.log" 2>&1
		urc=$?
		grep -E 'resmem|Setting permissions' "$T/udevadm.log" | sed 's/^/  udevadm: /'
		node=$(cat "$T/node.txt" 2>/dev/null)
		complaints=$(grep '99-resmem.rules:' "$T/udevadm.log" | grep -vE '^resmem0: [^ ]*99-resmem\.rules:[0-9]+ (GROUP|MODE) ')
		if ((urc == 0)) && grep -q "Reading rules file: .*/99-resmem.rules" "$T/udevadm.log" && [[ -z $complaints ]] &&
			[[ $node == "resmem 660" ]]; then
			record udev_rule_udevadm_test ok "udevadm test: rule read with no complaint; /dev/resmem0 (misc) got group resmem, mode 0660"
		else
			cat "$T/unshare.log"
			record udev_rule_udevadm_test fail "udevadm test (rc $urc): node '$node' (want 'resmem 660'); complaints: ${complaints:-none}"
		fi
	else
		record udev_rule_udevadm_test fail "$RULE is not installed"
	fi
}

# ---- resmem: the command line, its man pages, the shim ---------------------------------------------
check_cli() {
	local got pages missing_pages page path SHIM out
	got=$(/usr/bin/resmem --version 2>&1)
	if [[ $got == "resmem $VERSION" ]]; then
		record cli_version_from_usr_bin ok "/usr/bin/resmem --version: $got"
	else
		record cli_version_from_usr_bin fail "/usr/bin/resmem --version printed '$got' (want 'resmem $VERSION')"
	fi

	pages=() missing_pages=()
	for page in resmem $(/usr/bin/resmem --help | awk '/^([Ss]ub)?[Cc]ommands:/ {on = 1; next} on && /^  [a-z]/ {print "resmem-" $1} on && /^$/ {exit}'); do
		if path=$(man -w "$page" 2>/dev/null) && MANWIDTH=80 man -l "$path" 2>/dev/null | grep -q 'NAME'; then
			pages+=("$path")
		else
			missing_pages+=("$page")
		fi
	done
	if ((${#missing_pages[@]} == 0 && ${#pages[@]} > 1)); then
		record man_pages ok "${#pages[@]} pages: ${pages[*]}"
	else
		record man_pages fail "man -w finds no readable page for: ${missing_pages[*]:-the commands (none listed)}"
	fi

	SHIM=/usr/lib/x86_64-linux-gnu/resmem/libresmem_fuse_preload.so
	if out=$(LD_PRELOAD=$SHIM /bin/true 2>&1) && [[ -z $out ]]; then
		record preload_shim_loads ok "LD_PRELOAD=$SHIM /bin/true: no loader complaint"
	else
		record preload_shim_loads fail "LD_PRELOAD=$SHIM: '$out'"
	fi
}

[[ -z $DKMS_DEB ]] || check_dkms
[[ -z $TOOLS_DEB ]] || { check_udev_rule; check_cli; }

# ---- purge, and nothing left --------------------------------------------------------------------
if out=$(dpkg_waiting --purge "${PKGS[@]}"); then
	echo "$out" | sed 's/^/  dpkg: /'
	record dpkg_purge ok "dpkg --purge ${PKGS[*]}"
else
	echo "$out" | sed 's/^/  dpkg: /'
	record dpkg_purge fail "dpkg --purge failed (output above)"
fi
left=()
while read -r f; do [[ -n $f && ( -e /$f || -L /$f ) ]] && left+=("/$f"); done <<<"$PKG_FILES"
if [[ -n $DKMS_DEB ]]; then
	gone="/var/lib/dkms/resmem, the .ko, its modules.dep entry"
	for f in "/var/lib/dkms/resmem" "/usr/src/resmem-$VERSION" "/usr/share/doc/resmem-dkms"; do
		[[ -e $f ]] && left+=("$f")
	done
	for KVER in "${KVERS[@]}"; do
		compgen -G "/lib/modules/$KVER/updates/dkms/resmem.ko*" >/dev/null && left+=("/lib/modules/$KVER/updates/dkms/resmem.ko*")
		grep -q 'resmem\.ko' "/lib/modules/$KVER/modules.dep" 2>/dev/null && left+=("the resmem entry of /lib/modules/$KVER/modules.dep")
	done
fi
if [[ -n $TOOLS_DEB ]]; then
	gone="${gone:+$gone, }the udev rule, the man pages, the group"
	[[ -e /lib/udev/rules.d/99-resmem.rules ]] && left+=("/lib/udev/rules.d/99-resmem.rules")
	getent group resmem >/dev/null && left+=("the group resmem")
fi
for p in "${PKGS[@]}"; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -qv 'not-installed' && left+=("dpkg status of $p: $(dpkg-query -W -f '${Status}' "$p")")
done
checked=$(wc -l <<<"$PKG_FILES")
if ((${#left[@]} == 0)); then
	record nothing_left_after_purge ok "none of the $checked package files, nor $gone remains"
else
	record nothing_left_after_purge fail "left behind: ${left[*]}"
fi
finish
