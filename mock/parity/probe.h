/*
 * The device-parity probe (docs/parity.md): a fixed list of named operations on one resmem device,
 * each printed as one line "name: result" - errno NAMES, never numbers, and values relative to the
 * range's size (no addresses, no device numbers) - so transcripts of the real module
 * (kmod/resmem.c), the FUSE device (mock/fuse) and the simulated driver (mock/region) can be
 * diffed line by line.
 *
 * The operations reach the device through a small table of calls, so the same cases and the same
 * printing run on a file descriptor (probe_posix.c: the kernel module, the FUSE file, any path) and
 * on the simulated driver, which has none (sim_ops.cc). Plain C with no resmem dependency but
 * kmod/uapi/resmem_ioctl.h: builds with Bazel or with `gcc -static` for the QEMU guest.
 *
 * Contract of the table: every call returns a value >= 0 on success and -errno on failure, except
 * peek/poke, which return 0 or the number of the signal the access raised (SIGBUS, SIGSEGV, ...).
 */
#ifndef RESMEM_MOCK_PARITY_PROBE_H_
#define RESMEM_MOCK_PARITY_PROBE_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What fstat(2) says, reduced to what the probe compares. */
struct probe_stat {
	char type;     /* 'c' char device, 'b' block device, 'r' regular file, '?' other */
	uint64_t size; /* st_size */
};

struct probe_ops {
	void *ctx;
	/* open(2): a descriptor (>= 0) or -errno. flags are the host's O_* values. */
	int (*open)(void *ctx, const char *path, int flags);
	int (*close)(void *ctx, int fd);
	/* read(2)/write(2) at the file position: bytes moved, or -errno. */
	int64_t (*read)(void *ctx, int fd, void *buf, uint64_t count);
	int64_t (*write)(void *ctx, int fd, const void *buf, uint64_t count);
	/* lseek(2): the new position, or -errno. */
	int64_t (*lseek)(void *ctx, int fd, int64_t offset, int whence);
	int (*fstat)(void *ctx, int fd, struct probe_stat *st);
	/* ioctl(2) with a pointer argument (may be NULL): 0 or -errno. */
	int (*ioctl)(void *ctx, int fd, unsigned long cmd, void *arg);
	/* mmap(2) of the descriptor (prot PROT_*, flags MAP_SHARED or MAP_PRIVATE): 0 and an opaque
	 * *map, or -errno. munmap releases it. */
	int (*mmap)(void *ctx, int fd, uint64_t offset, uint64_t length, int prot, int flags,
		    void **map);
	int (*munmap)(void *ctx, void *map);
	/* CPU loads/stores through a mapping at a byte offset: 0, or the signal they raised. */
	int (*peek)(void *ctx, void *map, uint64_t offset, void *buf, uint64_t n);
	int (*poke)(void *ctx, void *map, uint64_t offset, const void *buf, uint64_t n);
};

/*
 * Runs every case on `path` and prints the transcript to `out`. The probe writes test patterns into
 * the device and restores the bytes it touched before it returns (saved through a mapping first).
 * Returns 0 when the transcript is complete, 1 when the device could not be probed at all (the
 * transcript then says why in its last line).
 */
int probe_run(const struct probe_ops *ops, const char *path, FILE *out);

/* "EINVAL" for EINVAL; "E123" for numbers it does not know. */
const char *probe_errno_name(int err);
/* "SIGBUS" for SIGBUS; "SIG12" for others. */
const char *probe_signal_name(int sig);

#ifdef __cplusplus
}
#endif

#endif /* RESMEM_MOCK_PARITY_PROBE_H_ */
