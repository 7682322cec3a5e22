#!/usr/bin/env bash
# ci/qemu/build_cache.sh, the QEMU lane's kept builds, on files made here:
#   1. the key: the same for the same inputs; another when a file's bytes change, when a text
#      input (a version, a flag) changes, or when a file is added; it fails on a missing file;
#   2. take before keep: nothing there, nothing copied, status 1;
#   3. keep then take: the items come back with their bytes and times (a folder too); an item
#      absent from the build is skipped; take prints when the entry was made;
#   4. a keep cut off halfway (a .new-* folder with no rename) is never taken, and an entry
#      without its stamp is not either;
#   5. keep leaves the newest KEEP entries of the prefix, and none of another prefix is touched.
# Usage: build_cache_test.sh (in Bazel: build_cache.sh in the runfiles' ci/qemu/.)
set -u
if [[ -n "${TEST_SRCDIR:-}" ]]; then SRC="$TEST_SRCDIR/${TEST_WORKSPACE:-resmem}"; else SRC="$(cd "$(dirname "$0")/../.." && pwd)"; fi
# shellcheck source=ci/qemu/build_cache.sh
source "$SRC/ci/qemu/build_cache.sh"
T=${TEST_TMPDIR:-$(mktemp -d)}
source "$SRC/ci/checks.sh"

# 1. the key
mkdir -p "$T/in"
echo 'int a;' >"$T/in/a.c"
echo 'int b;' >"$T/in/b.c"
k1=$(echo "6.1.0-56-amd64 gcc 12" | build_cache_key "$T/in/a.c" "$T/in/b.c")
k2=$(echo "6.1.0-56-amd64 gcc 12" | build_cache_key "$T/in/a.c" "$T/in/b.c")
[[ ${#k1} == 16 && $k1 == "$k2" ]] && ok "the same inputs give the same key ($k1)" || bad "key '$k1' then '$k2'"
echo 'int a = 1;' >"$T/in/a.c"
k3=$(echo "6.1.0-56-amd64 gcc 12" | build_cache_key "$T/in/a.c" "$T/in/b.c")
[[ $k3 != "$k1" ]] && ok "a file's bytes change the key" || bad "a changed file kept the key $k1"
k4=$(echo "6.1.0-56-amd64 gcc 13" | build_cache_key "$T/in/a.c" "$T/in/b.c")
[[ $k4 != "$k3" ]] && ok "a text input changes the key" || bad "a changed version kept the key $k3"
k5=$(echo "6.1.0-56-amd64 gcc 12" | build_cache_key "$T/in/a.c" "$T/in/b.c" "$T/in/b.c")
[[ $k5 != "$k3" ]] && ok "one more file changes the key" || bad "an added file kept the key $k3"
if echo x | build_cache_key "$T/in/a.c" "$T/in/missing.c" >/dev/null 2>&1; then
	bad "a missing input gave a key"
else
	ok "a missing input fails the key"
fi

# 2. take before keep
C="$T/cache/modules"
mkdir -p "$T/dest0"
if build_cache_take "$C/6.1-$k1" "$T/dest0" kmod >/dev/null 2>&1; then bad "take found an entry never kept"; else ok "take of an entry never kept: status 1"; fi
[[ -z $(ls -A "$T/dest0") ]] && ok "and copies nothing" || bad "take copied $(ls "$T/dest0")"

# 3. keep then take
B="$T/build"
mkdir -p "$B/kmod/uapi"
echo 'module' >"$B/kmod/resmem.ko"
echo 'hdr' >"$B/kmod/uapi/resmem_ioctl.h"
echo 'log' >"$B/kbuild.log"
touch -d '2026-01-02 03:04:05' "$B/kmod/resmem.ko"
build_cache_keep "$C/6.1-$k1" "$B" 4 kmod kbuild.log resmem-dkms.ko || bad "keep failed"
mkdir -p "$T/dest"
made=$(build_cache_take "$C/6.1-$k1" "$T/dest" kmod kbuild.log resmem-dkms.ko)
if cmp -s "$B/kmod/resmem.ko" "$T/dest/kmod/resmem.ko" && cmp -s "$B/kmod/uapi/resmem_ioctl.h" "$T/dest/kmod/uapi/resmem_ioctl.h" &&
	cmp -s "$B/kbuild.log" "$T/dest/kbuild.log"; then
	ok "keep then take: the items come back, folders and all"
else
	bad "take gave back: $(cd "$T/dest" && find . | tr '\n' ' ')"
fi
[[ $(stat -c %Y "$T/dest/kmod/resmem.ko") == $(stat -c %Y "$B/kmod/resmem.ko") ]] && ok "with their times" || bad "the times changed"
[[ ! -e "$T/dest/resmem-dkms.ko" ]] && ok "an item the build did not make is skipped" || bad "an absent item appeared"
[[ $made == 20*UTC ]] && ok "take says when the entry was made ($made)" || bad "take printed '$made'"

# 4. cut off halfway
mkdir -p "$C/.new-abc123/kmod" && echo half >"$C/.new-abc123/kmod/resmem.ko"
mkdir -p "$T/dest2"
if build_cache_take "$C/.new-abc123" "$T/dest2" kmod >/dev/null; then bad "a half-written keep was taken"; else ok "a half-written keep (.new-*) is never taken"; fi
mkdir -p "$C/6.1-0000000000000000/kmod"
if build_cache_take "$C/6.1-0000000000000000" "$T/dest2" kmod >/dev/null; then bad "an entry without its stamp was taken"; else ok "an entry without its stamp is not taken"; fi
rm -rf "$C/.new-abc123" "$C/6.1-0000000000000000"

# 5. the newest KEEP of a prefix
mkdir -p "$T/other" && echo x >"$T/other/kbuild.log"
build_cache_keep "$C/6.12-aaaaaaaaaaaaaaaa" "$T/other" 2 kbuild.log
for i in 1 2 3 4 5 6; do
	build_cache_keep "$C/6.1-$(printf '%016d' "$i")" "$B" 3 kbuild.log
	sleep 0.02
done
left=$(cd "$C" && ls -d 6.1-* | tr '\n' ' ')
[[ $left == "6.1-0000000000000004 6.1-0000000000000005 6.1-0000000000000006 " ]] && ok "keep leaves the newest 3 of the prefix ($left)" || bad "left: $left"
[[ -e "$C/6.12-aaaaaaaaaaaaaaaa/done" ]] && ok "another prefix's entry is untouched" || bad "keep removed another prefix's entry"
[[ -z $(ls -A "$C" | grep '^\.new-') ]] && ok "no temporary folder left" || bad "left: $(ls -A "$C")"

finish "build_cache_test"
