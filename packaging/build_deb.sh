#!/usr/bin/env bash
# Builds resmem's two Debian packages with dpkg-deb (packaging/BUILD runs it; docs/build.md,
# "Packages"):
#   build_deb.sh resmem-dkms OUT.deb VERSION MODPROBE_CONF DKMS_SOURCE...
#     /usr/src/resmem-VERSION/ (the module's source, Kbuild, dkms.conf with PACKAGE_VERSION set),
#     /usr/share/doc/resmem-dkms/examples/resmem.modprobe.conf; postinst/prerm run dkms.
#   build_deb.sh resmem OUT.deb VERSION RESMEM_BIN PRELOAD_SO UDEV_RULE
#     /usr/bin/resmem (static), /usr/lib/x86_64-linux-gnu/resmem/libresmem_fuse_preload.so,
#     /lib/udev/rules.d/99-resmem.rules, man pages made by help2man from `resmem --help` and
#     `resmem COMMAND --help` (resmem.1, resmem-COMMAND.1); postinst/postrm keep the group.
# Maintainer scripts come from packaging/debian/PACKAGE.{postinst,prerm,postrm}, with
# #MODULE_VERSION# replaced by VERSION (as dh_dkms does). Files are owned by root in the package
# (dpkg-deb --root-owner-group): no fakeroot needed. Exit 0 with OUT.deb written, 1 otherwise.
set -euo pipefail

die() { echo "build_deb.sh: $*" >&2; exit 1; }
(($# >= 4)) || die "usage: build_deb.sh resmem-dkms|resmem OUT.deb VERSION FILE..."
PACKAGE=$1 OUT=$2 VERSION=$3
shift 3
HERE=$(dirname "$0")
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (Debian package dpkg)"
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "version '$VERSION' is not a Debian version"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/resmem-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
ROOT="$STAGE/root"
mkdir -p "$ROOT/DEBIAN"

# install_file MODE SRC DEST: copies SRC to $ROOT/DEST with MODE.
install_file() { install -D -m "$1" "$2" "$ROOT/$3"; }

# maintainer_scripts: packaging/debian/$PACKAGE.* into DEBIAN/, version filled in.
maintainer_scripts() {
	local f s
	for s in postinst prerm postrm; do
		f="$HERE/debian/$PACKAGE.$s"
		[[ -f $f ]] || continue
		sed "s/#MODULE_VERSION#/$VERSION/g" "$f" >"$ROOT/DEBIAN/$s"
		chmod 755 "$ROOT/DEBIAN/$s"
	done
}

# man_pages BIN: resmem.1 and resmem-COMMAND.1 (gzip -9n) from the binary's own --help.
man_pages() {
	local bin=$1 man="$ROOT/usr/share/man/man1" cmd summary wrapper
	command -v help2man >/dev/null || die "help2man not found: apt-get install help2man (ci/setup.sh installs it)"
	mkdir -p "$man" "$STAGE/bin"
	local help
	help=$("$bin" --help) || die "$bin --help failed"
	help2man --no-info --no-discard-stderr --section=1 --version-string="$VERSION" \
		--name="test reserved physical RAM to NVIDIA GPU paths, simulated and real" \
		--output="$man/resmem.1" "$bin" || die "help2man failed on resmem --help"
	# The commands: the lines of the "commands:" list of `resmem --help` ("  NAME  SUMMARY"; CLI11
	# names that list "Subcommands:").
	local commands=0
	while read -r cmd summary; do
		wrapper="$STAGE/bin/resmem-$cmd"
		printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$bin" "$cmd" >"$wrapper"
		chmod 755 "$wrapper"
		"$wrapper" --help >/dev/null || die "resmem $cmd --help failed"
		help2man --no-info --no-discard-stderr --section=1 --version-string="$VERSION" \
			--name="$summary" --output="$man/resmem-$cmd.1" "$wrapper" ||
			die "help2man failed on resmem $cmd --help"
		# help2man names the page after the wrapper's path: name the command instead.
		sed -i "s|$STAGE/bin/resmem-$cmd|resmem $cmd|g" "$man/resmem-$cmd.1"
		commands=$((commands + 1))
	done < <(awk '/^([Ss]ub)?[Cc]ommands:/ {on = 1; next} on && /^  [a-z]/ {print} on && /^$/ {exit}' <<<"$help")
	((commands > 0)) || die "found no commands in \`resmem --help\` (no 'commands:' list): cannot write their man pages"
	gzip -9n "$man"/*.1
}

case "$PACKAGE" in
resmem-dkms)
	MODPROBE=$1
	shift
	SRC="usr/src/resmem-$VERSION"
	for f in "$@"; do
		rel=${f##*kmod/}  # kmod/uapi/resmem_ioctl.h -> uapi/resmem_ioctl.h
		install_file 644 "$f" "$SRC/$rel"
	done
	[[ -f "$ROOT/$SRC/dkms.conf" ]] || die "no dkms.conf among the module sources"
	grep -q '^PACKAGE_VERSION="#MODULE_VERSION#"$' "$ROOT/$SRC/dkms.conf" ||
		die "kmod/dkms.conf: PACKAGE_VERSION must read \"#MODULE_VERSION#\" (the package sets it)"
	sed -i "s/#MODULE_VERSION#/$VERSION/" "$ROOT/$SRC/dkms.conf"
	install_file 644 "$MODPROBE" "usr/share/doc/resmem-dkms/examples/resmem.modprobe.conf"
	ARCH=all
	DEPENDS="dkms (>= 2.1.0.0)"
	EXTRA="Recommends: resmem (= $VERSION)"
	DESCRIPTION="resmem kernel driver (DKMS source)
 The resmem driver serves memory reserved on the kernel command line (memmap=) as /dev/resmemN
 for mmap, with the reservation checked against the firmware map. dkms builds it for every
 installed kernel with headers. Options: /etc/modprobe.d (see the example in
 /usr/share/doc/resmem-dkms/examples)."
	;;
resmem)
	(($# == 3)) || die "usage: build_deb.sh resmem OUT.deb VERSION RESMEM_BIN PRELOAD_SO UDEV_RULE"
	BIN=$1 PRELOAD=$2 RULE=$3
	install_file 755 "$BIN" usr/bin/resmem
	strip --strip-unneeded "$ROOT/usr/bin/resmem"
	got=$("$ROOT/usr/bin/resmem" --version) || die "resmem --version failed"
	[[ $got == "resmem $VERSION" ]] || die "resmem --version prints '$got', the package is $VERSION"
	install_file 644 "$PRELOAD" usr/lib/x86_64-linux-gnu/resmem/libresmem_fuse_preload.so
	strip --strip-unneeded "$ROOT/usr/lib/x86_64-linux-gnu/resmem/libresmem_fuse_preload.so"
	install_file 644 "$RULE" lib/udev/rules.d/99-resmem.rules
	man_pages "$ROOT/usr/bin/resmem"
	ARCH=amd64
	DEPENDS="libc6, passwd"
	EXTRA="Suggests: resmem-dkms (= $VERSION), udev"
	DESCRIPTION="reserved physical RAM to NVIDIA GPU paths, tested
 resmem runs scenario files against a simulator and the real kernel driver (resmem-dkms), names
 the known failures a machine would hit (resmem doctor), and plans memmap= reservations. This
 package has the static command line, the LD_PRELOAD shim that points /dev/resmemN at a
 FUSE-emulated device, the udev rule for /dev/resmemN (group resmem) and the man pages."
	;;
*) die "unknown package '$PACKAGE' (resmem-dkms or resmem)" ;;
esac

maintainer_scripts
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$ROOT/DEBIAN/md5sums"
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
cat >"$ROOT/DEBIAN/control" <<EOF
Package: $PACKAGE
Version: $VERSION
Architecture: $ARCH
Maintainer: resmem developers <resmem@localhost>
Installed-Size: $SIZE
Depends: $DEPENDS
$EXTRA
Section: misc
Priority: optional
Description: $DESCRIPTION
EOF
# Reproducible: every file dated by SOURCE_DATE_EPOCH (0 unless set).
find "$ROOT" -exec touch -h -d "@${SOURCE_DATE_EPOCH:-0}" {} +
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0} dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT" >/dev/null ||
	die "dpkg-deb --build failed for $PACKAGE"
echo "build_deb.sh: $OUT ($PACKAGE $VERSION $ARCH, $SIZE KiB installed)"
