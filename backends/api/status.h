// Errors as values. A Status is either OK or carries the space its code comes from (errno, a CUDA
// runtime code, a signal that killed an access, or resmem's own), the code, and a message that names
// the problem and the way out. Result<T> is a T or a non-OK Status. Nothing here throws.
#ifndef RESMEM_BACKENDS_API_STATUS_H_
#define RESMEM_BACKENDS_API_STATUS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace resmem {

enum class ErrorSpace {
  kOk,       // no error
  kErrno,    // code is an errno value (EINVAL, ENOTTY, ...)
  kCuda,     // code is a CUDA runtime error number in the profile's numbering
  kSignal,   // an access was killed: code is the signal (SIGBUS, SIGKILL, SIGSEGV)
  kResmem,   // resmem's own: invalid input, unsupported operation, expectation failed
};

// resmem's own codes (ErrorSpace::kResmem).
enum ResmemCode : int {
  kInvalidArgument = 1,
  kUnsupported = 2,
  kNotFound = 3,
  kFailedPrecondition = 4,
  kInternal = 5,
  kUnavailable = 6,  // the part is not present on this machine (no GPU, no module, no FUSE)
};

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Errno(int err, std::string message) {
    return Status(ErrorSpace::kErrno, err, std::move(message));
  }
  static Status Cuda(int code, std::string message) {
    return Status(ErrorSpace::kCuda, code, std::move(message));
  }
  static Status Signal(int signo, std::string message) {
    return Status(ErrorSpace::kSignal, signo, std::move(message));
  }
  static Status Error(ResmemCode code, std::string message) {
    return Status(ErrorSpace::kResmem, code, std::move(message));
  }
  static Status InvalidArgument(std::string m) { return Error(kInvalidArgument, std::move(m)); }
  static Status Unsupported(std::string m) { return Error(kUnsupported, std::move(m)); }
  static Status Unavailable(std::string m) { return Error(kUnavailable, std::move(m)); }
  static Status Internal(std::string m) { return Error(kInternal, std::move(m)); }

  bool ok() const { return space_ == ErrorSpace::kOk; }
  ErrorSpace space() const { return space_; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }

  // "errno 22 (EINVAL): offset past the end ...", "cuda 30: ...", "signal 9 (SIGKILL): ...".
  std::string ToString() const;

  // Prefixes context to the message, keeping space and code: "mmap /dev/resmem0: <message>".
  Status WithContext(const std::string& context) const;

  bool operator==(const Status& o) const {
    return space_ == o.space_ && code_ == o.code_;
  }

 private:
  Status(ErrorSpace space, int code, std::string message)
      : space_(space), code_(code), message_(std::move(message)) {}
  ErrorSpace space_ = ErrorSpace::kOk;
  int code_ = 0;
  std::string message_;
};

const char* ErrorSpaceName(ErrorSpace space);
// Symbolic name of an errno value ("EINVAL"), or "" when unknown. And the reverse (-1 if unknown).
const char* ErrnoName(int err);
int ErrnoFromName(const std::string& name);
const char* SignalName(int signo);
int SignalFromName(const std::string& name);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}             // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}      // NOLINT: must be non-OK
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace resmem

// Early return on error, for functions returning Status or Result<...>.
#define RESMEM_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::resmem::Status _st = (expr);                   \
    if (!_st.ok()) return _st;                       \
  } while (0)

#define RESMEM_CONCAT_INNER(a, b) a##b
#define RESMEM_CONCAT(a, b) RESMEM_CONCAT_INNER(a, b)
#define RESMEM_ASSIGN_OR_RETURN(lhs, expr) \
  RESMEM_ASSIGN_OR_RETURN_IMPL(RESMEM_CONCAT(_res_, __LINE__), lhs, expr)
#define RESMEM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#endif  // RESMEM_BACKENDS_API_STATUS_H_
