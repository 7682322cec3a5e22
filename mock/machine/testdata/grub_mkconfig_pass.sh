# The steps of Debian 12's grub-mkconfig and /etc/grub.d/10_linux that carry GRUB_CMDLINE_LINUX
# into grub.cfg, unchanged apart from the file names (grub-2.06 util/grub-mkconfig.in lines
# 126 and 160-161, util/grub.d/10_linux.in linux_entry). grub_emu_record.sh sources it through
#   F=/path/to/default_grub dash -c '. ./grub_mkconfig_pass.sh' /usr/sbin/grub-mkconfig
# so that $0 reads as it does in grub-mkconfig.
set -e
grub_probe=/usr/sbin/grub-probe
set $grub_probe dummy
if test -f "$F" ; then
  . "$F"
fi
export GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT
dash -c '
set -e
linux_entry ()
{
  args="$4"
  sed "s/^/$submenu_indentation/" << EOF
	linux	/boot/vmlinuz-6.1.0-13-amd64 root=UUID=x ro ${args}
EOF
}
submenu_indentation=""
linux_entry "Debian GNU/Linux" "6.1.0-13-amd64" simple "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"
' /etc/grub.d/10_linux
