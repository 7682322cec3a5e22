/*
 * The probe on a real path (probe.h): the table of calls made of the system calls themselves, and
 * main(). Usage: resmem_parity_probe /dev/resmem0 (or a FUSE device file). Exit 0 when the
 * transcript is complete, 1 when the device could not be probed, 2 on bad usage.
 * Needs nothing of resmem but kmod/uapi; builds with `gcc -static -I. mock/parity/probe*.c`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mock/parity/probe.h"

struct posix_map {
	unsigned char *addr;
	uint64_t length;
};

static int posix_open(void *ctx, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);

	(void)ctx;
	return fd < 0 ? -errno : fd;
}

static int posix_close(void *ctx, int fd)
{
	(void)ctx;
	return close(fd) < 0 ? -errno : 0;
}

static int64_t posix_read(void *ctx, int fd, void *buf, uint64_t count)
{
	ssize_t n = read(fd, buf, count);

	(void)ctx;
	return n < 0 ? -errno : n;
}

static int64_t posix_write(void *ctx, int fd, const void *buf, uint64_t count)
{
	ssize_t n = write(fd, buf, count);

	(void)ctx;
	return n < 0 ? -errno : n;
}

static int64_t posix_lseek(void *ctx, int fd, int64_t offset, int whence)
{
	off_t r = lseek(fd, (off_t)offset, whence);

	(void)ctx;
	return r < 0 ? -errno : r;
}

static int posix_fstat(void *ctx, int fd, struct probe_stat *st)
{
	struct stat s;

	(void)ctx;
	if (fstat(fd, &s) < 0)
		return -errno;
	st->type = S_ISCHR(s.st_mode) ? 'c' : S_ISBLK(s.st_mode) ? 'b' : S_ISREG(s.st_mode) ? 'r' : '?';
	st->size = (uint64_t)s.st_size;
	return 0;
}

static int posix_ioctl(void *ctx, int fd, unsigned long cmd, void *arg)
{
	(void)ctx;
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static int posix_mmap(void *ctx, int fd, uint64_t offset, uint64_t length, int prot, int flags,
		      void **map)
{
	struct posix_map *m;
	void *a;

	(void)ctx;
	a = mmap(NULL, length, prot, flags, fd, (off_t)offset);
	if (a == MAP_FAILED)
		return -errno;
	m = malloc(sizeof *m);
	if (!m) {
		munmap(a, length);
		return -ENOMEM;
	}
	m->addr = a;
	m->length = length;
	*map = m;
	return 0;
}

static int posix_munmap(void *ctx, void *map)
{
	struct posix_map *m = map;
	int rc = munmap(m->addr, m->length) < 0 ? -errno : 0;

	(void)ctx;
	free(m);
	return rc;
}

/* Loads and stores through a mapping may raise SIGBUS (past the end of a file) or SIGSEGV (a
 * store to a read-only mapping): caught for the duration of the copy and reported. */
static sigjmp_buf touch_jmp;
static volatile sig_atomic_t touch_sig;

static void on_touch_signal(int sig)
{
	touch_sig = sig;
	siglongjmp(touch_jmp, 1);
}

static int guarded_copy(void *dst, const void *src, uint64_t n)
{
	struct sigaction sa, old_bus, old_segv;
	int sig = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_touch_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	touch_sig = 0;
	if (sigsetjmp(touch_jmp, 1) == 0) {
		volatile unsigned char *d = dst;
		const volatile unsigned char *s = src;
		uint64_t i;

		for (i = 0; i < n; i++)
			d[i] = s[i];
	} else {
		sig = touch_sig;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

static int posix_peek(void *ctx, void *map, uint64_t offset, void *buf, uint64_t n)
{
	struct posix_map *m = map;

	(void)ctx;
	return guarded_copy(buf, m->addr + offset, n);
}

static int posix_poke(void *ctx, void *map, uint64_t offset, const void *buf, uint64_t n)
{
	struct posix_map *m = map;

	(void)ctx;
	return guarded_copy(m->addr + offset, buf, n);
}

int main(int argc, char **argv)
{
	static const struct probe_ops ops = {
		NULL, posix_open, posix_close, posix_read, posix_write, posix_lseek, posix_fstat,
		posix_ioctl, posix_mmap, posix_munmap, posix_peek, posix_poke,
	};

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"usage: %s DEVICE\n"
			"  prints one line per operation on DEVICE (/dev/resmem0, or a resmem FUSE file):\n"
			"  the device-parity transcript of docs/parity.md. It writes test patterns into the\n"
			"  device and restores the bytes it touched; run it as a user who may open DEVICE\n"
			"  read-write.\n",
			argv[0]);
		return 2;
	}
	return probe_run(&ops, argv[1], stdout);
}
