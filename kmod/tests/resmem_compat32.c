// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit program (gcc -m32 -static, built by ci/qemu/kmod_lane.sh) in the QEMU guest: a 32-bit
 * process's ioctls reach a driver through its compat_ioctl (fs/ioctl.c compat_sys_ioctl), not
 * unlocked_ioctl, and its pointers are 32-bit. The uapi structs must lay out the same for both
 * (kmod/uapi/resmem_ioctl.h: __u64 fields 8-byte aligned by position, since i386 aligns __u64 to 4).
 *
 *   resmem_compat32 DEV PHYS SIZE   INFO, LENGTH and PHYS give PHYS and SIZE (what the 64-bit
 *                                   module was loaded with); a mapping of the first MiB
 *                                   round-trips data; an unknown command is ENOTTY.
 * Prints "# " diagnostics; exit 0 = pass, 1 = fail, 2 = usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "resmem_ioctl.h"

static int failures;

static void check(int ok, const char *what)
{
	printf("# %s: %s\n", what, ok ? "ok" : "WRONG");
	failures += !ok;
}

int main(int argc, char **argv)
{
	struct resmem_info info;
	uint64_t want_phys, want_size, v = 0;
	volatile uint32_t *p;
	int fd, i;

	if (argc != 4) {
		fprintf(stderr, "usage: resmem_compat32 DEV PHYS SIZE\n");
		return 2;
	}
	want_phys = strtoull(argv[2], NULL, 0);
	want_size = strtoull(argv[3], NULL, 0);
	printf("# a %zu-bit process: sizeof(void *) %zu, sizeof(struct resmem_info) %zu\n",
	       sizeof(void *) * 8, sizeof(void *), sizeof(struct resmem_info));
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		printf("# open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&info, 0xa5, sizeof(info));
	check(ioctl(fd, RESMEM_IOC_INFO, &info) == 0, "RESMEM_IOC_INFO through compat_ioctl");
	printf("# INFO: abi %u mode %u cache %u phys 0x%" PRIx64 " size 0x%" PRIx64 " name '%.32s'\n",
	       info.abi_version, info.mode, info.cache, (uint64_t)info.phys_addr, (uint64_t)info.size,
	       info.name);
	check(info.abi_version == RESMEM_ABI_VERSION, "INFO abi_version");
	check(info.phys_addr == want_phys && info.size == want_size, "INFO phys_addr and size");
	check(ioctl(fd, RESMEM_IOC_LENGTH, &v) == 0 && v == want_size, "RESMEM_IOC_LENGTH");
	check(ioctl(fd, RESMEM_IOC_PHYS, &v) == 0 && v == want_phys, "RESMEM_IOC_PHYS");
	check(ioctl(fd, _IOR(RESMEM_IOC_MAGIC, 15, uint64_t), &v) == -1 && errno == ENOTTY,
	      "an unknown command is ENOTTY");
	p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	check(p != MAP_FAILED, "mmap of the first MiB from a 32-bit address space");
	if (p != MAP_FAILED) {
		for (i = 0; i < (1 << 18); i += 1024)
			p[i] = 0xc0ffee00u + (uint32_t)i;
		for (i = 0; i < (1 << 18) && p[i] == 0xc0ffee00u + (uint32_t)i; i += 1024)
			;
		check(i >= (1 << 18), "data written through the 32-bit mapping reads back");
		munmap((void *)p, 1 << 20);
	}
	close(fd);
	printf("# %d checks wrong\n", failures);
	return failures ? 1 : 0;
}
