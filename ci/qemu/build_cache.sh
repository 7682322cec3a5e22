# The QEMU lane's kept builds (sourced by kmod_lane.sh; tested by build_cache_test.sh): a folder
# of entries named PREFIX-KEY, KEY a sha256 of everything the build read, so a run on the same
# inputs copies the build instead of doing it again, and a change to any input misses.
#
# build_cache_key FILE...      prints the first 16 hex digits of the sha256 of standard input (the
#                              inputs that are not files: versions, flags) and of each FILE's
#                              sha256; fails when a FILE cannot be read.
# build_cache_take ENTRY DEST ITEM...
#                              copies ENTRY's ITEMs into DEST (cp -a: times kept) and prints when
#                              the entry was made; returns 1, copying nothing, when ENTRY is not a
#                              complete entry.
# build_cache_keep ENTRY SRC KEEP ITEM...
#                              stores SRC's ITEMs (those present) as ENTRY: written into a temporary
#                              folder beside it and renamed, so a run cut off halfway leaves no
#                              entry; then keeps the KEEP newest entries of ENTRY's prefix.
build_cache_key() {
	local sums
	sums=$(sha256sum "$@") || return 1
	{ cat; awk '{print $1}' <<<"$sums"; } | sha256sum | cut -c1-16
}
build_cache_take() {
	local entry=$1 dest=$2 item
	shift 2
	[[ -e "$entry/done" ]] || return 1
	for item in "$@"; do
		if [[ -e "$entry/$item" ]]; then cp -a "$entry/$item" "$dest/"; fi
	done
	cat "$entry/done"
}
build_cache_keep() {
	local entry=$1 src=$2 keep=$3 item tmp
	shift 3
	mkdir -p "$(dirname "$entry")" && tmp=$(mktemp -d "$(dirname "$entry")/.new-XXXXXX") || return 1
	for item in "$@"; do
		if [[ -e "$src/$item" ]]; then cp -a "$src/$item" "$tmp/" || { rm -rf "$tmp"; return 1; }; fi
	done
	date -u '+%Y-%m-%d %H:%M:%S UTC' >"$tmp/done"
	# -T: a keep that raced another (the same entry made in between) fails, instead of moving the
	# folder inside it.
	rm -rf "$entry" && mv -T "$tmp" "$entry" || { rm -rf "$tmp"; return 1; }
	# shellcheck disable=SC2012 # entry names are PREFIX-HEX, no odd characters
	ls -dt "${entry%-*}"-* | tail -n +"$((keep + 1))" | xargs -r rm -rf
}
