#include "backends/api/status.h"

#include <cerrno>
#include <csignal>
#include <cstring>

namespace resmem {
namespace {

struct Named {
  int value;
  const char* name;
};

constexpr Named kErrnos[] = {
    {EPERM, "EPERM"},   {ENOENT, "ENOENT"}, {EINTR, "EINTR"},   {EIO, "EIO"},
    {ENXIO, "ENXIO"},   {E2BIG, "E2BIG"},   {EBADF, "EBADF"},   {EAGAIN, "EAGAIN"},
    {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EFAULT, "EFAULT"}, {EBUSY, "EBUSY"},
    {EEXIST, "EEXIST"}, {ENODEV, "ENODEV"}, {EINVAL, "EINVAL"}, {ENOTTY, "ENOTTY"},
    {EFBIG, "EFBIG"},   {ENOSPC, "ENOSPC"}, {ERANGE, "ERANGE"}, {ENOSYS, "ENOSYS"},
    {EOVERFLOW, "EOVERFLOW"}, {ENOTCONN, "ENOTCONN"}, {ETIMEDOUT, "ETIMEDOUT"},
    {EOPNOTSUPP, "EOPNOTSUPP"}, {EADDRINUSE, "EADDRINUSE"}, {EROFS, "EROFS"},
    {ENOTSUP, "ENOTSUP"}, {EPROTO, "EPROTO"}, {ECANCELED, "ECANCELED"},
    {EDOM, "EDOM"}, {EADDRNOTAVAIL, "EADDRNOTAVAIL"},
    {EBADMSG, "EBADMSG"}, {ENOKEY, "ENOKEY"}, {EKEYREJECTED, "EKEYREJECTED"},  // module signing
};

constexpr Named kSignals[] = {
    {SIGBUS, "SIGBUS"}, {SIGSEGV, "SIGSEGV"}, {SIGKILL, "SIGKILL"},
    {SIGABRT, "SIGABRT"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
};

template <size_t N>
const char* Lookup(const Named (&table)[N], int value) {
  for (const auto& n : table)
    if (n.value == value) return n.name;
  return "";
}
template <size_t N>
int Reverse(const Named (&table)[N], const std::string& name) {
  for (const auto& n : table)
    if (name == n.name) return n.value;
  return -1;
}

}  // namespace

const char* ErrnoName(int err) { return Lookup(kErrnos, err); }
int ErrnoFromName(const std::string& name) { return Reverse(kErrnos, name); }
const char* SignalName(int signo) { return Lookup(kSignals, signo); }
int SignalFromName(const std::string& name) { return Reverse(kSignals, name); }

const char* ErrorSpaceName(ErrorSpace space) {
  switch (space) {
    case ErrorSpace::kOk: return "ok";
    case ErrorSpace::kErrno: return "errno";
    case ErrorSpace::kCuda: return "cuda";
    case ErrorSpace::kSignal: return "signal";
    case ErrorSpace::kResmem: return "resmem";
  }
  return "?";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out = ErrorSpaceName(space_);
  out += " " + std::to_string(code_);
  const char* sym = "";
  if (space_ == ErrorSpace::kErrno) sym = ErrnoName(code_);
  if (space_ == ErrorSpace::kSignal) sym = SignalName(code_);
  if (*sym) out += std::string(" (") + sym + ")";
  if (!message_.empty()) out += ": " + message_;
  return out;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(space_, code_, context + ": " + message_);
}

}  // namespace resmem
