#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Feature probes for the resmem modules: each probe is a few lines of C compiled against the
# kernel's own headers with the module build's compiler and flags (from kmod/Kbuild), so the code
# asks "does this kernel have X" and never "is this kernel newer than N" (distributions backport).
# The answers go into one generated header, resmem_conftest.h, as RESMEM_HAVE_<NAME> macros.
#
#   conftest.sh header CC... -- CFLAGS...
#                                     print resmem_conftest.h (Kbuild runs it; CC is the build's
#                                     compiler command, CFLAGS the module build's flags: -nostdinc,
#                                     LINUXINCLUDE, KBUILD_CFLAGS, ...)
#   conftest.sh list                  print "NAME<TAB>CHANGE<TAB>VERSION<TAB>WHAT", one probe a
#                                     line: the mainline version that added or removed what the
#                                     probe looks for (docs/kmod.md's table; the QEMU lane checks
#                                     every probe's answer on its kernel against it)
#
# A probe that fails to compile says "no". Every probe is compiled with -Werror, so a changed
# signature (an incompatible function pointer) is a "no" too, not a warning that slips through.
# A probe looks for something a compiler can tell apart: C takes an enum parameter as compatible
# with unsigned int, so ->huge_fault's change from enum page_entry_size to an order is probed by
# the enum's presence (PE_SIZE_PMD), not by the function pointer's type.
# Before any probe, a file that only includes <linux/module.h> must compile: when it does not, the
# compile command itself is broken (a missing compiler, wrong flags) and every "no" would be a lie,
# so the script stops with the compiler's output instead of writing a header.
# A few answers are not in the headers but in what the kernel exports (Module.symvers): those
# probes read it instead of compiling.
# Adding a probe: one probe_NAME function below (its C on stdin of try_compile), one line in
# list_probes, the #ifdef where the code uses it, and a row in docs/kmod.md.
set -u

list_probes() {
	cat <<'EOF'
HUGE_FAULT_PE_SIZE	removed	6.6	vm_operations_struct.huge_fault takes enum page_entry_size (PE_SIZE_PMD); from 6.6 an order
VM_FLAGS_SET	added	6.3	vm_flags_set(); vma->vm_flags is read-only from then on
PMD_PFNMAP	added	6.11	PFN-map PMDs are marked special (pmd_special, ARCH_SUPPORTS_PMD_PFNMAP): gup-fast leaves them alone
PTE_OFFSET_MAP	added	6.5	__pte_offset_map: page-table walkers (MADV_COLD/PAGEOUT) leave devmap PMDs alone
PGMAP_RANGE	added	5.10	struct dev_pagemap describes its memory by range/nr_range (before: a struct resource)
MODULE_IMPORT_NS_IDENT	removed	6.13	MODULE_IMPORT_NS takes a bare identifier (a string literal from 6.13)
PFN_T	removed	6.17	pfn_t with PFN_DEV|PFN_MAP (devmap entries): pages mode's fault path inserts its struct pages this way
E820_RAW_EXPORT	removed	6.19	e820__mapped_raw_any (the firmware's e820 map) is exported to every module, not to KVM alone
EOF
}

# try_compile: compiles stdin as a C file with the module build's flags; status 0 if it compiled.
try_compile() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/resmem-conftest.XXXXXX") || return 2
	cat >"$tmp/probe.c"
	# shellcheck disable=SC2086  # CFLAGS is a list of words
	$CC $CFLAGS -Werror -DKBUILD_MODNAME='"resmem_conftest"' -DKBUILD_BASENAME='"probe"' \
		-c "$tmp/probe.c" -o "$tmp/probe.o" >"$tmp/log" 2>&1
	rc=$?
	[ -n "${RESMEM_CONFTEST_LOG:-}" ] && { echo "== $1 (exit $rc)"; cat "$tmp/log"; } >>"$RESMEM_CONFTEST_LOG"
	rm -rf "$tmp"
	return $rc
}

probe_HUGE_FAULT_PE_SIZE() {
	try_compile HUGE_FAULT_PE_SIZE <<'EOF'
#include <linux/mm.h>
static vm_fault_t probe_huge_fault(struct vm_fault *vmf, enum page_entry_size pe_size)
{
	return pe_size == PE_SIZE_PMD ? VM_FAULT_FALLBACK : 0;
}
const struct vm_operations_struct probe_ops = { .huge_fault = probe_huge_fault };
EOF
}

probe_VM_FLAGS_SET() {
	try_compile VM_FLAGS_SET <<'EOF'
#include <linux/mm.h>
void probe(struct vm_area_struct *vma);
void probe(struct vm_area_struct *vma) { vm_flags_set(vma, VM_IO); }
EOF
}

probe_PMD_PFNMAP() {
	try_compile PMD_PFNMAP <<'EOF'
#include <linux/mm.h>
#include <linux/pgtable.h>
#ifndef CONFIG_ARCH_SUPPORTS_PMD_PFNMAP
#error "PFN-map PMDs are not marked special on this kernel"
#endif
bool probe(pmd_t pmd);
bool probe(pmd_t pmd) { return pmd_special(pmd); }
EOF
}

probe_PTE_OFFSET_MAP() {
	try_compile PTE_OFFSET_MAP <<'EOF'
#include <linux/mm.h>
#include <linux/pgtable.h>
pte_t *probe(pmd_t *pmd, unsigned long addr);
pte_t *probe(pmd_t *pmd, unsigned long addr) { return __pte_offset_map(pmd, addr, NULL); }
EOF
}

probe_PGMAP_RANGE() {
	try_compile PGMAP_RANGE <<'EOF'
#include <linux/memremap.h>
void probe(struct dev_pagemap *p);
void probe(struct dev_pagemap *p) { p->range.start = 0; p->range.end = 1; p->nr_range = 1; }
EOF
}

probe_MODULE_IMPORT_NS_IDENT() {
	try_compile MODULE_IMPORT_NS_IDENT <<'EOF'
#include <linux/module.h>
MODULE_IMPORT_NS(DMA_BUF);
EOF
}

probe_PFN_T() {
	try_compile PFN_T <<'EOF'
#include <linux/mm.h>
#include <linux/pfn_t.h>
pfn_t probe(phys_addr_t pa);
pfn_t probe(phys_addr_t pa) { return phys_to_pfn_t(pa, PFN_DEV | PFN_MAP); }
EOF
}

# Not a compile: an export's namespace lives in the kernel's Module.symvers (Kbuild passes its path
# as RESMEM_SYMVERS), whose lines read CRC<TAB>SYMBOL<TAB>MODULE<TAB>EXPORT<TAB>NAMESPACE. An empty
# namespace is an export to every module; a missing Module.symvers answers "no".
probe_E820_RAW_EXPORT() {
	[ -r "${RESMEM_SYMVERS:-}" ] || return 1
	awk -F '\t' '$2 == "e820__mapped_raw_any" && $3 == "vmlinux" && $5 == "" { found = 1 } END { exit !found }' "$RESMEM_SYMVERS"
	rc=$?
	[ -n "${RESMEM_CONFTEST_LOG:-}" ] && { echo "== E820_RAW_EXPORT (exit $rc)"; grep -F "	e820__mapped_raw_any	" "$RESMEM_SYMVERS"; } >>"$RESMEM_CONFTEST_LOG"
	return $rc
}

case "${1:-}" in
list)
	list_probes
	;;
header)
	shift
	CC=
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do CC="$CC $1"; shift; done
	[ $# -gt 0 ] && [ -n "$CC" ] || { echo "usage: $0 header CC... -- CFLAGS..." >&2; exit 2; }
	shift
	CFLAGS="$*"
	sanity_log=$(mktemp "${TMPDIR:-/tmp}/resmem-conftest-sanity.XXXXXX") || exit 2
	if ! RESMEM_CONFTEST_LOG=$sanity_log try_compile SANITY <<'EOF'
#include <linux/module.h>
EOF
	then
		echo "kmod/conftest.sh: cannot compile even an empty module file with:$CC $CFLAGS" >&2
		cat "$sanity_log" >&2
		echo "kmod/conftest.sh: the probes cannot answer; fix the compiler or the kernel headers above" >&2
		rm -f "$sanity_log"
		exit 1
	fi
	rm -f "$sanity_log"
	echo "/* Generated by kmod/conftest.sh from this kernel's headers: do not edit. */"
	echo "#ifndef RESMEM_CONFTEST_H"
	echo "#define RESMEM_CONFTEST_H"
	list_probes | while IFS='	' read -r name _ version what; do
		echo "/* $what (Linux $version) */"
		if "probe_$name"; then
			echo "#define RESMEM_HAVE_$name 1"
		else
			echo "/* #undef RESMEM_HAVE_$name */"
		fi
	done
	echo "#endif"
	;;
*)
	echo "usage: $0 header CC... -- CFLAGS... | $0 list" >&2
	exit 2
	;;
esac
