// A TAP diagnostic line on the guest console ("# " + the printf-formatted text), flushed at once so
// the lane sees it even if the guest dies next. Shared by the guest programs (resmem_guest,
// resmem_seq).
#ifndef RESMEM_CI_QEMU_TAP_DIAG_H_
#define RESMEM_CI_QEMU_TAP_DIAG_H_

#include <cstdarg>
#include <cstdio>

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

}  // namespace resmem::guest

#endif  // RESMEM_CI_QEMU_TAP_DIAG_H_
