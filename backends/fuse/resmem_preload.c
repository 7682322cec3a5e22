/*
 * LD_PRELOAD shim for programs that hard-code /dev/resmemN: when RESMEM_FUSE_DIR is set, opening
 * "/dev/resmem<anything without a slash>" opens "$RESMEM_FUSE_DIR/resmem<...>" instead, the file
 * of the FUSE-emulated device (mock/fuse). Every other path goes to libc untouched. Covers open,
 * open64, openat, openat64 and glibc's _FORTIFY_SOURCE entry points (__open_2, ...), which
 * programs built with -O2 -D_FORTIFY_SOURCE call instead of open.
 * RESMEM_FUSE_VERBOSE=1 prints each redirection to stderr.
 *
 *   LD_PRELOAD=.../libresmem_fuse_preload.so RESMEM_FUSE_DIR=/tmp/mnt ./forum_program
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef int (*open_fn)(const char*, int, ...);
typedef int (*openat_fn)(int, const char*, int, ...);

static const char kDevicePrefix[] = "/dev/resmem";

/* open(2): the mode argument exists only with O_CREAT or O_TMPFILE. */
static int needs_mode(int flags) {
#ifdef O_TMPFILE
  if ((flags & O_TMPFILE) == O_TMPFILE) return 1;
#endif
  return (flags & O_CREAT) != 0;
}

/* Returns the path to open: `path` itself, or its emulated twin written into buf. */
static const char* redirect(const char* path, char* buf, size_t n) {
  const char* dir = getenv("RESMEM_FUSE_DIR");
  if (!path || !dir || !*dir) return path;
  if (strncmp(path, kDevicePrefix, sizeof kDevicePrefix - 1) != 0) return path;
  const char* name = path + 5; /* "resmem..." */
  if (strchr(name, '/')) return path;
  int len = snprintf(buf, n, "%s/%s", dir, name);
  if (len < 0 || (size_t)len >= n) return path;
  const char* verbose = getenv("RESMEM_FUSE_VERBOSE");
  if (verbose && *verbose == '1') fprintf(stderr, "resmem-preload: %s -> %s\n", path, buf);
  return buf;
}

static void* next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "resmem-preload: libc has no %s: %s\n", name, dlerror());
    errno = ENOSYS;
  }
  return f;
}

#define OPEN_LIKE(fname)                                        \
  int fname(const char* path, int flags, ...) {                 \
    static open_fn real;                                        \
    mode_t mode = 0;                                            \
    char buf[4096];                                             \
    if (needs_mode(flags)) {                                    \
      va_list ap;                                               \
      va_start(ap, flags);                                      \
      mode = (mode_t)va_arg(ap, int);                           \
      va_end(ap);                                               \
    }                                                           \
    if (!real) real = (open_fn)next(#fname);                    \
    if (!real) return -1;                                       \
    return real(redirect(path, buf, sizeof buf), flags, mode);  \
  }

#define OPENAT_LIKE(fname)                                          \
  int fname(int dirfd, const char* path, int flags, ...) {          \
    static openat_fn real;                                          \
    mode_t mode = 0;                                                \
    char buf[4096];                                                 \
    if (needs_mode(flags)) {                                        \
      va_list ap;                                                   \
      va_start(ap, flags);                                          \
      mode = (mode_t)va_arg(ap, int);                               \
      va_end(ap);                                                   \
    }                                                               \
    if (!real) real = (openat_fn)next(#fname);                      \
    if (!real) return -1;                                           \
    return real(dirfd, redirect(path, buf, sizeof buf), flags, mode); \
  }

OPEN_LIKE(open)
OPEN_LIKE(open64)
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

/* _FORTIFY_SOURCE variants: (path, flags) without a mode. */
int __open_2(const char* path, int flags) {
  static int (*real)(const char*, int);
  char buf[4096];
  if (!real) real = (int (*)(const char*, int))next("__open_2");
  if (!real) return -1;
  return real(redirect(path, buf, sizeof buf), flags);
}
int __open64_2(const char* path, int flags) {
  static int (*real)(const char*, int);
  char buf[4096];
  if (!real) real = (int (*)(const char*, int))next("__open64_2");
  if (!real) return -1;
  return real(redirect(path, buf, sizeof buf), flags);
}
int __openat_2(int dirfd, const char* path, int flags) {
  static int (*real)(int, const char*, int);
  char buf[4096];
  if (!real) real = (int (*)(int, const char*, int))next("__openat_2");
  if (!real) return -1;
  return real(dirfd, redirect(path, buf, sizeof buf), flags);
}
int __openat64_2(int dirfd, const char* path, int flags) {
  static int (*real)(int, const char*, int);
  char buf[4096];
  if (!real) real = (int (*)(int, const char*, int))next("__openat64_2");
  if (!real) return -1;
  return real(dirfd, redirect(path, buf, sizeof buf), flags);
}
