/*
 * The device-parity probe's cases and transcript (probe.h). The list is fixed and runs in this
 * order on every body; a case that depends on an earlier one still prints its line.
 */
#define _GNU_SOURCE
#include "mock/parity/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kmod/uapi/resmem_ioctl.h"

#define PAGE 4096ull
/* The smallest device the probe accepts: its cases touch three windows of three pages. */
#define MIN_SIZE (1ull << 20)

const char *probe_errno_name(int err)
{
	static char other[16];

	switch (err) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case EFBIG: return "EFBIG";
	case ENOSPC: return "ENOSPC";
	case ESPIPE: return "ESPIPE";
	case EROFS: return "EROFS";
	case ERANGE: return "ERANGE";
	case ENOSYS: return "ENOSYS";
	case EOVERFLOW: return "EOVERFLOW";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case EDOM: return "EDOM";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	default:
		snprintf(other, sizeof other, "E%d", err);
		return other;
	}
}

const char *probe_signal_name(int sig)
{
	static char other[16];

	switch (sig) {
	case 0: return "ok";
	case SIGBUS: return "SIGBUS";
	case SIGSEGV: return "SIGSEGV";
	case SIGKILL: return "SIGKILL";
	default:
		snprintf(other, sizeof other, "SIG%d", sig);
		return other;
	}
}

struct probe {
	const struct probe_ops *ops;
	void *c;
	const char *path;
	FILE *out;
	uint64_t size;
	int fd;      /* O_RDWR, the main descriptor */
	int fd_ro;   /* O_RDONLY */
	int fd_wo;   /* O_WRONLY */
	int fd_sync; /* O_RDWR | O_SYNC */
	int fd_app;  /* O_RDWR | O_APPEND */
};

static void line(struct probe *p, const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(p->out, "%s: ", name);
	va_start(ap, fmt);
	vfprintf(p->out, fmt, ap);
	va_end(ap);
	fputc('\n', p->out);
	fflush(p->out);
}

/* A position relative to the size: "0", "4096", "size/2+100", "size-100", "size+4096". */
static const char *pos_text(const struct probe *p, int64_t v, char *buf, size_t n)
{
	uint64_t u, half = p->size / 2;

	if (v < 0) {
		snprintf(buf, n, "%s", probe_errno_name((int)-v));
		return buf;
	}
	u = (uint64_t)v;
	if (u < half / 2)
		snprintf(buf, n, "%llu", (unsigned long long)u);
	else if (u < half + half / 2)
		snprintf(buf, n, u == half ? "size/2" : u > half ? "size/2+%llu" : "size/2-%llu",
			 (unsigned long long)(u > half ? u - half : half - u));
	else
		snprintf(buf, n, u == p->size ? "size" : u > p->size ? "size+%llu" : "size-%llu",
			 (unsigned long long)(u > p->size ? u - p->size : p->size - u));
	return buf;
}

/* A count or an errno name. */
static const char *count_text(int64_t v, char *buf, size_t n)
{
	if (v < 0)
		snprintf(buf, n, "%s", probe_errno_name((int)-v));
	else
		snprintf(buf, n, "%lld", (long long)v);
	return buf;
}

static const char *rc_text(int rc) { return rc < 0 ? probe_errno_name(-rc) : "ok"; }

static void fill(unsigned char *b, uint64_t n, unsigned seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8) + 1u);
}

static int64_t cur(struct probe *p, int fd) { return p->ops->lseek(p->c, fd, 0, SEEK_CUR); }

/* ---- open ---------------------------------------------------------------------------------- */

static int open_case(struct probe *p, const char *name, const char *path, int flags, int keep)
{
	int fd = p->ops->open(p->c, path, flags);

	line(p, name, "%s", rc_text(fd));
	if (fd >= 0 && !keep) {
		p->ops->close(p->c, fd);
		fd = -1;
	}
	return fd;
}

static void open_cases(struct probe *p)
{
	char missing[512];

	p->fd_ro = open_case(p, "open_rdonly", p->path, O_RDONLY, 1);
	p->fd_wo = open_case(p, "open_wronly", p->path, O_WRONLY, 1);
	p->fd_sync = open_case(p, "open_rdwr_sync", p->path, O_RDWR | O_SYNC, 1);
	p->fd_app = open_case(p, "open_rdwr_append", p->path, O_RDWR | O_APPEND, 1);
	open_case(p, "open_creat", p->path, O_RDWR | O_CREAT, 0);
	open_case(p, "open_creat_excl", p->path, O_RDWR | O_CREAT | O_EXCL, 0);
	open_case(p, "open_direct", p->path, O_RDWR | O_DIRECT, 0);
	snprintf(missing, sizeof missing, "%s.missing", p->path);
	open_case(p, "open_missing", missing, O_RDWR, 0);
}

/* ---- fstat ---------------------------------------------------------------------------------- */

static void fstat_cases(struct probe *p)
{
	struct probe_stat st;
	char b[64];
	int rc = p->ops->fstat(p->c, p->fd, &st);
	const char *type;

	if (rc < 0) {
		line(p, "fstat", "%s", probe_errno_name(-rc));
		return;
	}
	type = st.type == 'c' ? "chr" : st.type == 'b' ? "blk" : st.type == 'r' ? "reg" : "other";
	line(p, "fstat", "type=%s size=%s", type,
	     st.size == 0 ? "0" : pos_text(p, (int64_t)st.size, b, sizeof b));
}

/* ---- ioctl ---------------------------------------------------------------------------------- */

static int resmem_name_ok(const char *name, size_t n)
{
	size_t i;

	if (strncmp(name, "resmem", 6) != 0)
		return 0;
	for (i = 6; i < n && name[i]; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return i > 6 && i < n;
}

static void ioctl_cases(struct probe *p)
{
	struct resmem_info info, info_sync;
	struct resmem_test_pin pin;
	__u64 v = 0;
	int rc;

	memset(&info, 0, sizeof info);
	rc = p->ops->ioctl(p->c, p->fd, RESMEM_IOC_INFO, &info);
	if (rc < 0)
		line(p, "ioctl_info", "%s", probe_errno_name(-rc));
	else
		line(p, "ioctl_info", "ok abi=%u mode=%s cache=%s flags=%u size=%s phys=%s name=%s",
		     info.abi_version,
		     info.mode == RESMEM_MODE_PFNMAP ? "pfnmap" : info.mode == RESMEM_MODE_PAGES ? "pages" : "?",
		     info.cache == RESMEM_CACHE_WB ? "wb" : info.cache == RESMEM_CACHE_WC ? "wc" :
		     info.cache == RESMEM_CACHE_UC ? "uc" : "?",
		     info.flags, info.size == p->size ? "length" : "differs-from-length",
		     info.phys_addr && info.phys_addr % PAGE == 0 ? "page-aligned" : "unaligned-or-0",
		     resmem_name_ok(info.name, sizeof info.name) ? "resmemN" : "unexpected");
	rc = p->ops->ioctl(p->c, p->fd, RESMEM_IOC_PHYS, &v);
	line(p, "ioctl_phys", "%s%s", rc_text(rc),
	     rc < 0 ? "" : v == info.phys_addr ? " =info.phys_addr" : " differs-from-info");

	memset(&info_sync, 0, sizeof info_sync);
	rc = p->fd_sync < 0 ? -EBADF : p->ops->ioctl(p->c, p->fd_sync, RESMEM_IOC_INFO, &info_sync);
	/* O_SYNC changes no caching: the cache type is the device's (kmod/resmem.c, docs/kmod.md). */
	line(p, "ioctl_info_o_sync", "%s%s", rc_text(rc),
	     rc < 0 ? "" : info_sync.cache == info.cache ? " cache=as-without-O_SYNC" : " cache=changed");
	rc = p->fd_ro < 0 ? -EBADF : p->ops->ioctl(p->c, p->fd_ro, RESMEM_IOC_LENGTH, &v);
	line(p, "ioctl_length_rdonly_fd", "%s", rc_text(rc));
	rc = p->fd_wo < 0 ? -EBADF : p->ops->ioctl(p->c, p->fd_wo, RESMEM_IOC_LENGTH, &v);
	line(p, "ioctl_length_wronly_fd", "%s", rc_text(rc));

	line(p, "ioctl_info_null", "%s", rc_text(p->ops->ioctl(p->c, p->fd, RESMEM_IOC_INFO, NULL)));
	line(p, "ioctl_length_null", "%s", rc_text(p->ops->ioctl(p->c, p->fd, RESMEM_IOC_LENGTH, NULL)));
	line(p, "ioctl_phys_null", "%s", rc_text(p->ops->ioctl(p->c, p->fd, RESMEM_IOC_PHYS, NULL)));
	line(p, "ioctl_unknown_nr", "%s",
	     rc_text(p->ops->ioctl(p->c, p->fd, _IOR(RESMEM_IOC_MAGIC, 99, __u64), &v)));
	line(p, "ioctl_unknown_nr_null", "%s",
	     rc_text(p->ops->ioctl(p->c, p->fd, _IOR(RESMEM_IOC_MAGIC, 99, __u64), NULL)));
	line(p, "ioctl_unknown_no_arg", "%s",
	     rc_text(p->ops->ioctl(p->c, p->fd, _IO(RESMEM_IOC_MAGIC, 0), NULL)));
	line(p, "ioctl_other_magic", "%s", rc_text(p->ops->ioctl(p->c, p->fd, _IOR('X', 1, int), &v)));
	memset(&pin, 0, sizeof pin);
	/* Only the test build (resmem_test.ko) knows it; the production module answers ENOTTY. */
	line(p, "ioctl_test_pin", "%s", rc_text(p->ops->ioctl(p->c, p->fd, RESMEM_IOC_TEST_PIN, &pin)));
}

/* ---- lseek ---------------------------------------------------------------------------------- */

static void seek_case(struct probe *p, const char *name, int64_t off, int whence)
{
	char b[64];

	line(p, name, "%s", pos_text(p, p->ops->lseek(p->c, p->fd, off, whence), b, sizeof b));
}

static void lseek_cases(struct probe *p)
{
	int64_t s = (int64_t)p->size;
	char b[64];

	seek_case(p, "lseek_set_0", 0, SEEK_SET);
	seek_case(p, "lseek_set_middle", s / 2, SEEK_SET);
	seek_case(p, "lseek_cur_plus_100", 100, SEEK_CUR);
	seek_case(p, "lseek_cur_minus_200", -200, SEEK_CUR);
	seek_case(p, "lseek_end_0", 0, SEEK_END);
	seek_case(p, "lseek_end_minus_100", -100, SEEK_END);
	seek_case(p, "lseek_set_past_end", s + 4096, SEEK_SET);
	seek_case(p, "lseek_end_plus_4096", 4096, SEEK_END);
	seek_case(p, "lseek_set_negative", -1, SEEK_SET);
	p->ops->lseek(p->c, p->fd, 0, SEEK_SET);
	seek_case(p, "lseek_cur_before_start", -4096, SEEK_CUR);
	line(p, "lseek_pos_after_error", "%s", pos_text(p, cur(p, p->fd), b, sizeof b));
	seek_case(p, "lseek_end_before_start", -(s + 4096), SEEK_END);
	seek_case(p, "lseek_data_0", 0, SEEK_DATA);
	seek_case(p, "lseek_hole_0", 0, SEEK_HOLE);
	seek_case(p, "lseek_data_at_end", s, SEEK_DATA);
	seek_case(p, "lseek_bad_whence", 0, 99);
}

/* ---- read, write ---------------------------------------------------------------------------- */

/* Seeks fd to `at` for case `name`; prints the case's line and returns 0 when it cannot. */
static int positioned(struct probe *p, const char *name, int fd, int64_t at)
{
	if (fd < 0) {
		line(p, name, "no-descriptor");
		return 0;
	}
	if (p->ops->lseek(p->c, fd, at, SEEK_SET) != at) {
		line(p, name, "lseek-failed");
		return 0;
	}
	return 1;
}

static void read_case(struct probe *p, const char *name, int fd, int64_t at, uint64_t count)
{
	static unsigned char buf[256 * 1024];
	char b1[64], b2[64];
	int64_t n;

	if (!positioned(p, name, fd, at))
		return;
	n = p->ops->read(p->c, fd, buf, count);
	line(p, name, "%s pos=%s", count_text(n, b1, sizeof b1), pos_text(p, cur(p, fd), b2, sizeof b2));
}

/* Writes `count` bytes of pattern `seed` at `at` through fd; reads back what was written with the
 * main descriptor. */
static void write_case(struct probe *p, const char *name, int fd, int64_t at, uint64_t count,
		       unsigned seed)
{
	unsigned char wbuf[4096], rbuf[4096];
	char b1[64], b2[64];
	const char *readback = "";
	int64_t n;

	fill(wbuf, sizeof wbuf, seed);
	if (!positioned(p, name, fd, at))
		return;
	n = p->ops->write(p->c, fd, wbuf, count);
	pos_text(p, cur(p, fd), b2, sizeof b2);
	if (n > 0) {
		memset(rbuf, 0, sizeof rbuf);
		readback = p->ops->lseek(p->c, p->fd, at, SEEK_SET) == at &&
				   p->ops->read(p->c, p->fd, rbuf, (uint64_t)n) == n &&
				   memcmp(rbuf, wbuf, (size_t)n) == 0
			   ? " readback=same"
			   : " readback=differs";
	}
	line(p, name, "%s pos=%s%s", count_text(n, b1, sizeof b1), b2, readback);
}

static void read_write_cases(struct probe *p)
{
	int64_t s = (int64_t)p->size;

	read_case(p, "read_0", p->fd, 0, 4096);
	read_case(p, "read_middle", p->fd, s / 2, 4096);
	read_case(p, "read_large", p->fd, 0, 256 * 1024);
	read_case(p, "read_crossing_end", p->fd, s - 100, 4096);
	read_case(p, "read_at_end", p->fd, s, 4096);
	read_case(p, "read_past_end", p->fd, s + 4096, 4096);
	read_case(p, "read_zero_count", p->fd, 0, 0);
	read_case(p, "read_rdonly_fd", p->fd_ro, 0, 4096);
	read_case(p, "read_wronly_fd", p->fd_wo, 0, 4096);

	write_case(p, "write_0", p->fd, 0, 4096, 1);
	write_case(p, "write_middle", p->fd, s / 2, 4096, 2);
	write_case(p, "write_crossing_end", p->fd, s - 100, 4096, 3);
	write_case(p, "write_at_end", p->fd, s, 4096, 4);
	write_case(p, "write_past_end", p->fd, s + 4096, 4096, 5);
	write_case(p, "write_zero_at_end", p->fd, s, 0, 6);
	write_case(p, "write_wronly_fd", p->fd_wo, 4096, 4096, 7);
	write_case(p, "write_sync_fd", p->fd_sync, 8192, 4096, 8);
	write_case(p, "write_rdonly_fd", p->fd_ro, 0, 4096, 10);
	/* O_APPEND: the position is the end of the device (fixed size), whatever the file offset. */
	write_case(p, "write_append_fd", p->fd_app, 0, 4096, 9);
}

/* ---- mmap ----------------------------------------------------------------------------------- */

/* Maps, touches the first and the last byte, unmaps: "mapped first=ok last=ok" or the errno. */
static void map_case(struct probe *p, const char *name, int fd, uint64_t off, uint64_t len,
		     int prot, int flags)
{
	void *m = NULL;
	unsigned char x;
	int rc, first, last;

	if (fd < 0) {
		line(p, name, "no-descriptor");
		return;
	}
	rc = p->ops->mmap(p->c, fd, off, len, prot, flags, &m);
	if (rc < 0) {
		line(p, name, "%s", probe_errno_name(-rc));
		return;
	}
	first = p->ops->peek(p->c, m, 0, &x, 1);
	last = p->ops->peek(p->c, m, len - 1, &x, 1);
	line(p, name, "mapped first=%s last=%s", probe_signal_name(first), probe_signal_name(last));
	p->ops->munmap(p->c, m);
}

static void mmap_cases(struct probe *p)
{
	const int rw = PROT_READ | PROT_WRITE;
	uint64_t s = p->size;
	unsigned char wbuf[4096], rbuf[4096];
	void *m = NULL;
	int rc, fd;

	map_case(p, "mmap_shared_rw_page0", p->fd, 0, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_shared_ro_prot", p->fd, 0, PAGE, PROT_READ, MAP_SHARED);
	map_case(p, "mmap_whole", p->fd, 0, s, rw, MAP_SHARED);
	map_case(p, "mmap_middle", p->fd, s / 2, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_last_page", p->fd, s - PAGE, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_length_not_page_multiple", p->fd, 0, 100, rw, MAP_SHARED);
	map_case(p, "mmap_length_0", p->fd, 0, 0, rw, MAP_SHARED);
	map_case(p, "mmap_unaligned_offset", p->fd, 100, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_at_end", p->fd, s, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_crossing_end", p->fd, s - PAGE, 2 * PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_far_past_end", p->fd, 4 * s, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_private_rw", p->fd, 0, PAGE, rw, MAP_PRIVATE);
	map_case(p, "mmap_private_ro", p->fd, 0, PAGE, PROT_READ, MAP_PRIVATE);
	map_case(p, "mmap_shared_rw_rdonly_fd", p->fd_ro, 0, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_shared_ro_rdonly_fd", p->fd_ro, 0, PAGE, PROT_READ, MAP_SHARED);
	map_case(p, "mmap_wronly_fd", p->fd_wo, 0, PAGE, rw, MAP_SHARED);
	map_case(p, "mmap_sync_fd", p->fd_sync, 0, PAGE, rw, MAP_SHARED);

	/* A store through a read-only mapping. */
	rc = p->ops->mmap(p->c, p->fd, 0, PAGE, PROT_READ, MAP_SHARED, &m);
	if (rc < 0) {
		line(p, "mmap_ro_store", "%s", probe_errno_name(-rc));
	} else {
		fill(wbuf, 8, 10);
		line(p, "mmap_ro_store", "%s", probe_signal_name(p->ops->poke(p->c, m, 0, wbuf, 8)));
		p->ops->munmap(p->c, m);
	}

	/* write(2) and a mapping see the same bytes, both ways. */
	rc = p->ops->mmap(p->c, p->fd, PAGE, PAGE, rw, MAP_SHARED, &m);
	if (rc < 0) {
		line(p, "write_then_mapping_sees", "%s", probe_errno_name(-rc));
		line(p, "mapping_store_then_read_sees", "%s", probe_errno_name(-rc));
	} else {
		fill(wbuf, sizeof wbuf, 11);
		if (p->ops->lseek(p->c, p->fd, (int64_t)PAGE, SEEK_SET) != (int64_t)PAGE ||
		    p->ops->write(p->c, p->fd, wbuf, sizeof wbuf) != (int64_t)sizeof wbuf) {
			line(p, "write_then_mapping_sees", "write-failed");
		} else {
			rc = p->ops->peek(p->c, m, 0, rbuf, sizeof rbuf);
			line(p, "write_then_mapping_sees", "%s",
			     rc ? probe_signal_name(rc) : memcmp(rbuf, wbuf, sizeof rbuf) ? "differs" : "same");
		}
		fill(wbuf, sizeof wbuf, 12);
		rc = p->ops->poke(p->c, m, 0, wbuf, sizeof wbuf);
		memset(rbuf, 0, sizeof rbuf);
		if (rc)
			line(p, "mapping_store_then_read_sees", "%s", probe_signal_name(rc));
		else if (p->ops->lseek(p->c, p->fd, (int64_t)PAGE, SEEK_SET) != (int64_t)PAGE ||
			 p->ops->read(p->c, p->fd, rbuf, sizeof rbuf) != (int64_t)sizeof rbuf)
			line(p, "mapping_store_then_read_sees", "read-failed");
		else
			line(p, "mapping_store_then_read_sees", "%s",
			     memcmp(rbuf, wbuf, sizeof rbuf) ? "differs" : "same");
		p->ops->munmap(p->c, m);
	}

	/* O_TRUNC cannot shrink a device: the open succeeds and the bytes stay (fs/namei.c do_open
	 * drops O_TRUNC for anything but a regular file). */
	fd = p->ops->open(p->c, p->path, O_RDWR | O_TRUNC);
	if (fd < 0) {
		line(p, "open_trunc", "%s", probe_errno_name(-fd));
	} else {
		__u64 len = 0;
		/* First a mapping, before anything could refresh a cached size. */
		int touch = p->ops->mmap(p->c, fd, PAGE, PAGE, rw, MAP_SHARED, &m);
		int same;

		if (touch < 0) {
			line(p, "open_trunc_then_map", "%s", probe_errno_name(-touch));
		} else {
			touch = p->ops->peek(p->c, m, 0, rbuf, sizeof rbuf);
			line(p, "open_trunc_then_map", "%s%s", probe_signal_name(touch),
			     touch ? "" : memcmp(rbuf, wbuf, sizeof rbuf) ? " data=lost" : " data=kept");
			p->ops->munmap(p->c, m);
		}
		same = p->ops->lseek(p->c, fd, (int64_t)PAGE, SEEK_SET) == (int64_t)PAGE &&
			   p->ops->read(p->c, fd, rbuf, sizeof rbuf) == (int64_t)sizeof rbuf &&
			   memcmp(rbuf, wbuf, sizeof rbuf) == 0;
		rc = p->ops->ioctl(p->c, fd, RESMEM_IOC_LENGTH, &len);
		line(p, "open_trunc", "ok data=%s length=%s", same ? "kept" : "lost",
		     rc < 0 ? probe_errno_name(-rc) : len == p->size ? "kept" : "changed");
		p->ops->close(p->c, fd);
	}

	/* A mapping outlives the descriptor it came from. */
	fd = p->ops->open(p->c, p->path, O_RDWR);
	rc = fd < 0 ? fd : p->ops->mmap(p->c, fd, 0, PAGE, rw, MAP_SHARED, &m);
	if (fd >= 0)
		p->ops->close(p->c, fd);
	if (rc < 0) {
		line(p, "mapping_outlives_close", "%s", probe_errno_name(-rc));
	} else {
		line(p, "mapping_outlives_close", "%s", probe_signal_name(p->ops->peek(p->c, m, 0, rbuf, 8)));
		p->ops->munmap(p->c, m);
	}
}

/* ---- save and restore ----------------------------------------------------------------------- */

struct window {
	uint64_t off, len;
	unsigned char *saved;
};

/* Copies the windows the cases write into (start, middle, end) out through a mapping. */
static int save_windows(struct probe *p, struct window *w, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		void *m = NULL;
		int rc = p->ops->mmap(p->c, p->fd, w[i].off, w[i].len, PROT_READ | PROT_WRITE,
				      MAP_SHARED, &m);

		if (rc < 0)
			return rc;
		w[i].saved = malloc(w[i].len);
		rc = w[i].saved ? p->ops->peek(p->c, m, 0, w[i].saved, w[i].len) : -ENOMEM;
		p->ops->munmap(p->c, m);
		if (rc)
			return rc > 0 ? -EFAULT : rc;
	}
	return 0;
}

static int restore_windows(struct probe *p, struct window *w, int n)
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		void *m = NULL;

		if (!w[i].saved)
			continue;
		if (p->ops->mmap(p->c, p->fd, w[i].off, w[i].len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, &m) < 0 ||
		    p->ops->poke(p->c, m, 0, w[i].saved, w[i].len) != 0)
			bad = 1;
		if (m)
			p->ops->munmap(p->c, m);
		free(w[i].saved);
		w[i].saved = NULL;
	}
	return bad ? -EIO : 0;
}

int probe_run(const struct probe_ops *ops, const char *path, FILE *out)
{
	struct probe p;
	struct window w[3];
	__u64 len = 0;
	int rc;

	memset(&p, 0, sizeof p);
	p.ops = ops;
	p.c = ops->ctx;
	p.path = path;
	p.out = out;
	p.fd_ro = p.fd_wo = p.fd_sync = p.fd_app = -1;

	fprintf(out, "probe: resmem-parity 1\n");
	p.fd = ops->open(p.c, path, O_RDWR);
	line(&p, "open_rdwr", "%s", rc_text(p.fd));
	if (p.fd < 0) {
		line(&p, "abort", "cannot open %s read-write", path);
		return 1;
	}
	rc = ops->ioctl(p.c, p.fd, RESMEM_IOC_LENGTH, &len);
	line(&p, "ioctl_length", "%s", rc_text(rc));
	if (rc < 0 || len < MIN_SIZE || len % PAGE) {
		line(&p, "abort", "the probe needs RESMEM_IOC_LENGTH to give a page multiple of at least 1 MiB");
		ops->close(p.c, p.fd);
		return 1;
	}
	p.size = len;
	w[0].off = 0;
	w[1].off = p.size / 2 - PAGE;
	w[2].off = p.size - 3 * PAGE;
	w[0].len = w[1].len = w[2].len = 3 * PAGE;
	w[0].saved = w[1].saved = w[2].saved = NULL;
	rc = save_windows(&p, w, 3);
	if (rc < 0) {
		line(&p, "abort", "cannot save the bytes the probe writes through a mapping (%s); nothing was written",
		     probe_errno_name(-rc));
		free(w[0].saved);
		free(w[1].saved);
		free(w[2].saved);
		ops->close(p.c, p.fd);
		return 1;
	}

	open_cases(&p);
	fstat_cases(&p);
	ioctl_cases(&p);
	lseek_cases(&p);
	read_write_cases(&p);
	mmap_cases(&p);

	line(&p, "restore", "%s", rc_text(restore_windows(&p, w, 3)));
	if (p.fd_ro >= 0) ops->close(p.c, p.fd_ro);
	if (p.fd_wo >= 0) ops->close(p.c, p.fd_wo);
	if (p.fd_sync >= 0) ops->close(p.c, p.fd_sync);
	if (p.fd_app >= 0) ops->close(p.c, p.fd_app);
	line(&p, "close", "%s", rc_text(ops->close(p.c, p.fd)));
	line(&p, "close_again", "%s", rc_text(ops->close(p.c, p.fd)));
	return 0;
}
