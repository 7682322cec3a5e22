#include "backends/api/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace resmem {

std::string WhyUnreadable(int err) {
  const std::string why = std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return why + "; check the path";
    case EACCES:
    case EPERM:
      return why + "; make it readable (chmod a+r; a folder also a+x) or run as a user who may read it";
    case EISDIR:
      return why + "; give a file, not a folder";
    default:
      return why;
  }
}

Result<std::string> ReadTextFile(const std::string& path, const std::string& what) {
  const auto refused = [&](int err) {
    return Status::Errno(err, "cannot read " + what + "'" + path + "': " + WhyUnreadable(err));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refused(errno);
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return refused(EISDIR);
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return refused(err);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

}  // namespace resmem
