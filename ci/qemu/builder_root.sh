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
#       kernel's release. An empty LINE (a kernel tree of your own, built with SUITE's
#       compiler) installs SUITE's gcc, make and openssl instead and leaves BUILDER_KVER empty.
#       A root made before is reused, and updated only when it lacks the newest headers. The root is made in DIR.new and renamed when complete, under a lock, so a
#       run that stopped halfway never leaves a root that looks made.
#   builder_root_kver DIR LINE
#       prints the release of the newest LINE.x kernel whose headers DIR has installed, without
#       the network (nothing when DIR is no root or has none): what builder_root_ensure last set.
#   in_builder CMD...
#       runs CMD in $BUILDER_ROOT (here, when it is empty) in a private mount namespace: /proc
#       mounted (objtool reads it) and $WORK and every folder of BUILDER_BINDS bind-mounted at
#       its own path, so every path under them reads the same inside and out (the debug kernel's
#       cache: build_debug_kernel.sh). The environment (KCFLAGS, dkms's key paths) passes.
#
# Environment: RESMEM_DEBIAN_MIRROR (default http://deb.debian.org/debian).

BUILDER_ROOT=
BUILDER_KVER=
BUILDER_BINDS=()

in_builder() {
	if [[ -z $BUILDER_ROOT ]]; then
		"$@"
		return
	fi
	local dir binds=("$WORK" "${BUILDER_BINDS[@]}")
	for dir in "${binds[@]}"; do mkdir -p "$BUILDER_ROOT$dir"; done
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --propagation private sh -c '
		root=$1 n=$2; shift 2
		mount -t proc proc "$root/proc" || exit 125
		while [ "$n" -gt 0 ]; do mount --bind "$1" "$root$1" || exit 125; shift; n=$((n - 1)); done
		exec chroot "$root" "$@"
	' sh "$BUILDER_ROOT" "${#binds[@]}" "${binds[@]}" "$@"
}

builder_root_kver() {
	[[ -x "$1/usr/bin/dpkg-query" ]] || return 0
	# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
	chroot "$1" dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "linux-headers-$2.*-amd64" 2>/dev/null |
		awk '$1 == "ii" {print $2}' | sed 's/^linux-headers-//' | sort -V | tail -1
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
	local new="$dir.new" pkg='' wanted
	mkdir -p "$(dirname "$dir")"
	exec {lock}>"$dir.lock"
	flock "$lock"
	if [[ ! -x "$dir/usr/bin/apt-get" ]]; then
		log "making a $suite root to build ${line:-your kernel}'s modules in: $dir (debootstrap from $mirror)"
		rm -rf "$new"
		debootstrap --variant=minbase "$suite" "$new" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
			{ tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap $suite $new failed ($WORK/debootstrap.log)"; }
		echo "deb $mirror $suite-backports main" >"$new/etc/apt/sources.list.d/backports.list"
		mv "$new" "$dir"
	fi
	builder_apt "$dir" update >"$WORK/builder-apt.log" 2>&1 ||
		{ tail -20 "$WORK/builder-apt.log" >&2; die "apt-get update in $dir failed"; }
	if [[ -n $line ]]; then
		pkg=$(builder_newest_headers "$dir" "$line")
		[[ -n $pkg ]] || die "$suite-backports carries no linux-headers-$line.*-amd64 any more (apt-cache pkgnames linux-headers- in $dir): the lane's kernel line $line needs updating"
		wanted=("$pkg" dkms openssl)
	else
		wanted=(gcc make openssl)
	fi
	if ! chroot "$dir" dpkg -s "${wanted[@]}" >/dev/null 2>&1; then
		log "installing ${wanted[*]} in $dir"
		builder_apt "$dir" install -y --no-install-recommends "${wanted[@]}" >>"$WORK/builder-apt.log" 2>&1 ||
			{ tail -20 "$WORK/builder-apt.log" >&2; die "apt-get install ${wanted[*]} in $dir failed"; }
	fi
	flock -u "$lock"
	exec {lock}>&-
	BUILDER_ROOT=$dir
	BUILDER_KVER=${pkg#linux-headers-}
}
