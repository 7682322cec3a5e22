#!/bin/bash
# Records ground truth for mock/machine/grub.cc from the real programs, on Debian 12:
#  1. grub_cfg_cases.txt: how real GRUB (Debian's grub-emu: the same grub-core/script lexer and
#     executor as the GRUB that boots) expands each text when it stands as the arguments of a
#     command inside a menuentry written the way Debian's /etc/grub.d/10_linux writes it.
#  2. etc_default_grub_cases.txt: each /etc/default/grub text through dash exactly as
#     grub-mkconfig and 10_linux handle it (`set $grub_probe dummy`, `. /etc/default/grub`,
#     linux_entry's here-doc), then the grub.cfg line it gives through grub-emu as in 1.
# Output: grub_emu_transcript.txt (read by grub_test.cc). Needs grub-emu (apt-get install
# grub-emu), dash and util-linux `script` (grub-emu wants a terminal). Run from this folder:
#   ./grub_emu_record.sh > grub_emu_transcript.txt
# The kernel loader is not run (grub-emu's `linux` would kexec): a GRUB function `show` stands in
# for it and prints the argv it gets, which is what grub-core/loader/i386/linux.c receives.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mods=/usr/lib/grub/x86_64-emu
[ -d "$mods" ] || { echo "grub-emu modules not found in $mods" >&2; exit 1; }

# grub_argv TEXT: prints argc:/argv: lines, or "dropped", then GRUB's error lines.
grub_argv() {
  local d out
  d=$(mktemp -d)
  ln -s "$mods" "$d/x86_64-emu"
  {
    cat <<'HEAD'
set timeout=0
set default=0
if [ x"${feature_menuentry_id}" = xy ]; then
  menuentry_id_option="--id"
else
  menuentry_id_option=""
fi
export menuentry_id_option
function show {
  echo "@@argc=$#"
  for a in "$@"; do echo "@@<$a>"; done
}
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-x' {
	echo	'Loading Linux 6.1.0-13-amd64 ...'
HEAD
    printf '\tshow\t%s\n' "$1"
    cat <<'TAIL'
	echo	'Loading initial ramdisk ...'
	echo	'@@end'
	halt
}
TAIL
  } > "$d/grub.cfg"
  out=$(timeout 10 script -qc "grub-emu -d $d" /dev/null < /dev/null 2>/dev/null | tr -d '\r' |
        sed 's/\x1b\[[0-9;]*[A-Za-z]//g' || true)
  rm -rf "$d"
  if printf '%s\n' "$out" | grep -q '^@@argc='; then
    printf '%s\n' "$out" | sed -n 's/^@@<\(.*\)>$/argv: <\1>/p; s/^@@argc=\(.*\)$/argc: \1/p'
  else
    echo "dropped"
  fi
  printf '%s\n' "$out" | grep '^error:' | sed 's/^/grub: /' || true
}

# grub_cfg_line FILE: the grub.cfg linux line grub-mkconfig + 10_linux write for /etc/default/grub
# = FILE, by the same shell steps (grub-mkconfig.in: `set $grub_probe dummy`, `. default/grub`,
# export; 10_linux.in linux_entry: args="$4", sed "s/^/$submenu_indentation/" << EOF).
grub_cfg_line() {
  (cd "$here" && F="$1" dash -c '. ./grub_mkconfig_pass.sh' /usr/sbin/grub-mkconfig)
}

echo "# $(dpkg-query -W -f 'grub-emu ${Version}' grub-emu 2>/dev/null || echo 'grub-emu ?'), $(dpkg-query -W -f 'dash ${Version}' dash 2>/dev/null || echo 'dash ?'): transcript from grub_emu_record.sh"
echo "# case: the text after 'linux<TAB>/boot/vmlinuz-6.1.0-13-amd64 ' in grub.cfg"
echo "# default: an /etc/default/grub text (\\n: a newline); cfg: the grub.cfg linux line's text after"
echo "#   'ro ' that grub-mkconfig writes for it, or 'shell:' and dash's error (no grub.cfg written)"
echo "# argv: each argument GRUB passes (between < >); dropped: GRUB drops the menuentry"
while IFS= read -r line; do
  case "$line" in '#'*|'') continue ;; esac
  echo "case: $line"
  grub_argv "$(printf '%s' "$line" | sed 's/\\n/\n/g')"
done < "$here/grub_cfg_cases.txt"

while IFS= read -r line; do
  case "$line" in '#'*|'') continue ;; esac
  echo "default: $line"
  f=$(mktemp)
  printf '%s\n' "$line" | sed 's/\\n/\n/g' > "$f"
  if cfg=$(grub_cfg_line "$f" 2>"$f.err"); then
    args=${cfg#*root=UUID=x ro }
    printf 'cfg: %s\n' "$args" | sed -n '1p'
    # A value with a newline writes more than one line into grub.cfg.
    n=$(printf '%s\n' "$cfg" | wc -l)
    if [ "$n" -gt 1 ]; then echo "cfg-lines: $n"; fi
    grub_argv "$args"
  else
    echo "shell: $(sed "s/^[^:]*: [0-9]*: //; s#$f#/etc/default/grub#g" "$f.err" | head -1)"
  fi
  rm -f "$f" "$f.err"
done < "$here/etc_default_grub_cases.txt"
