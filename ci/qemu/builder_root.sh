# shellcheck shell=bash
# Sourced by ci/qemu/kmod_lane.sh: a Debian root to build kernel modules in, for a kernel line
# whose headers this machine cannot build against. Debian 13's backports kernels (7.x) are built
# with trixie's gcc-14 and ship kbuild tools and a .config made for it (-fmin-function-alignment,
# which Debian 12's gcc-12 refuses), so their modules are built in a minbase trixie root of the
# lane's own, as a user of that kernel builds them on Debian 13. Nothing is installed on this
# machine but debootstrap.
#
#   builder_root_ensure DIR SUITE LINE
#       makes DIR a minbase root of SUITE (debootstrap) with SUITE-backports in its sources,
#       installs there the headers of the newest LINE.x kernel SUITE-backports carries
#       (linux-headers-LINE.N+debNN-amd64, which brings that kernel's compiler and kbuild),
#       dkms and what dkms signs with, and sets BUILDER_ROOT=DIR and BUILDER_KVER to that
#       kernel's release. A root made before is reused, and updated only when it lacks the
#       newest headers. The root is made in DIR.new and renamed when complete, under a lock, so a
#       run that stopped halfway never leaves a root that looks made.
#   in_builder CMD...
#       runs CMD in $BUILDER_ROOT (here, when it is empty) in a private mount namespace: /proc
#       mounted (objtool reads it) and $WORK bind-mounted at its own path, so every path under
#       $WORK reads the same inside and out. The environment (KCFLAGS, dkms's key paths) passes.
#
# Environment: RESMEM_DEBIAN_MIRROR (default http://deb.debian.org/debian).

BUILDER_ROOT=
BUILDER_KVER=

in_builder() {
	if [[ -z $BUILDER_ROOT ]]; then
		"$@"
		return
	fi
	mkdir -p "$BUILDER_ROOT$WORK"
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --propagation private sh -c '
		root=$1 work=$2; shift 2
		mount -t proc proc "$root/proc" && mount --bind "$work" "$root$work" && exec chroot "$root" "$@"
	' sh "$BUILDER_ROOT" "$WORK" "$@"
}

# builder_apt ROOT ARGS...: apt-get in ROOT, quiet, without recommends, waiting for its lock.
builder_apt() {
	local root=$1
	shift
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 "$@"
}

# builder_newest_headers ROOT LINE SUITE: the newest linux-headers-LINE.N+debNN-amd64 ROOT's
# indexes know, or nothing.
builder_newest_headers() {
	chroot "$1" apt-cache pkgnames linux-headers- 2>/dev/null |
		grep -E "^linux-headers-${2//./\\.}(\.[0-9]+)+\+deb[0-9]+-amd64$" | sort -V | tail -1
}

builder_root_ensure() {
	local dir=$1 suite=$2 line=$3 mirror=${RESMEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
	local new="$dir.new" pkg
	mkdir -p "$(dirname "$dir")"
	exec {lock}>"$dir.lock"
	flock "$lock"
	if [[ ! -x "$dir/usr/bin/apt-get" ]]; then
		log "making a $suite root to build $line's modules in: $dir (debootstrap from $mirror)"
		rm -rf "$new"
		debootstrap --variant=minbase "$suite" "$new" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
			{ tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap $suite $new failed ($WORK/debootstrap.log)"; }
		echo "deb $mirror $suite-backports main" >"$new/etc/apt/sources.list.d/backports.list"
		mv "$new" "$dir"
	fi
	builder_apt "$dir" update >"$WORK/builder-apt.log" 2>&1 ||
		{ tail -20 "$WORK/builder-apt.log" >&2; die "apt-get update in $dir failed"; }
	pkg=$(builder_newest_headers "$dir" "$line")
	[[ -n $pkg ]] || die "$suite-backports carries no linux-headers-$line.*-amd64 any more (apt-cache pkgnames linux-headers- in $dir): the lane's kernel line $line needs updating"
	if ! chroot "$dir" dpkg -s "$pkg" dkms openssl >/dev/null 2>&1; then
		log "installing $pkg, dkms and openssl in $dir"
		builder_apt "$dir" install -y --no-install-recommends "$pkg" dkms openssl >>"$WORK/builder-apt.log" 2>&1 ||
			{ tail -20 "$WORK/builder-apt.log" >&2; die "apt-get install $pkg dkms openssl in $dir failed"; }
	fi
	flock -u "$lock"
	exec {lock}>&-
	BUILDER_ROOT=$dir
	BUILDER_KVER=${pkg#linux-headers-}
}
