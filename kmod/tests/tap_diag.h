// What the guest programs (kmod/tests/resmem_seq here; ci/qemu's resmem_guest, resmem_edu_guest
// and resmem_p2p_guest) share to report on the guest console: TAP diagnostic lines ("# " + text,
// flushed at once so the lane sees them even if the guest dies next), a case's failure line, errno
// names including those the module returns, and the kernel log records written since a point in
// time (/dev/kmsg).
#ifndef RESMEM_KMOD_TESTS_TAP_DIAG_H_
#define RESMEM_KMOD_TESTS_TAP_DIAG_H_

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::guest {

inline void Diag(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void Diag(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("# ", stdout);
  std::vfprintf(stdout, fmt, ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  va_end(ap);
}

// A case's failure: "# FAIL: why"; returns the case's exit status, 1.
inline int Fail(const std::string& why) {
  Diag("FAIL: %s", why.c_str());
  return 1;
}

// errno names, including the ones the module returns that the shared table may not know.
inline const char* ErrName(int err) {
  switch (err) {
    case EDOM: return "EDOM";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EOVERFLOW: return "EOVERFLOW";
    case ERANGE: return "ERANGE";
    case ENOTCONN: return "ENOTCONN";
    case ENOPKG: return "ENOPKG";
    default: {
      const char* n = ErrnoName(err);
      return n && *n ? n : "E?";
    }
  }
}

// Kernel log records written after construction (/dev/kmsg, read without blocking).
class KmsgSince {
 public:
  KmsgSince() : fd_(open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
    if (fd_ >= 0) lseek(fd_, 0, SEEK_END);
  }
  ~KmsgSince() {
    if (fd_ >= 0) close(fd_);
  }
  KmsgSince(const KmsgSince&) = delete;
  KmsgSince& operator=(const KmsgSince&) = delete;
  // The message text of each record since the last call ("prio,seq,time,flags;TEXT"); records
  // the ring buffer overwrote meanwhile are skipped.
  std::vector<std::string> Lines() {
    std::vector<std::string> out;
    char rec[8192];
    for (;;) {
      ssize_t n = fd_ < 0 ? -1 : read(fd_, rec, sizeof rec - 1);
      if (n < 0 && errno == EPIPE) continue;
      if (n <= 0) break;
      std::string r(rec, static_cast<size_t>(n));
      size_t semi = r.find(';');
      r = semi == std::string::npos ? r : r.substr(semi + 1);
      out.push_back(r.substr(0, r.find('\n')));
    }
    return out;
  }

 private:
  int fd_;
};

}  // namespace resmem::guest

#endif  // RESMEM_KMOD_TESTS_TAP_DIAG_H_
