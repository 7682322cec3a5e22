#include "engine/cli/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace resmem::cli {
namespace {

namespace fs = std::filesystem;

// "the JSON report --json out/r.json"
std::string Named(const NamedPath& p) {
  return (p.what.empty() ? "" : p.what + " ") + p.option + " " + p.path;
}

Status CannotWrite(const NamedPath& out, int err, const std::string& way_out) {
  return Status::Errno(err, "cannot write " + Named(out) + ": " + std::strerror(err) + "; " +
                                way_out);
}

std::string FolderWayOut(const NamedPath& out) {
  const std::string name = fs::path(out.path).filename().string();
  return "give a file in a folder that exists and that you may write (e.g. mkdir -p out, then " +
         out.option + " out/" + (name.empty() ? "NAME" : name) + ")";
}

// The descriptor of this process a path names (/dev/stdout 1, /dev/stderr 2, /dev/fd/N,
// /proc/self/fd/N), else -1.
int DescriptorOf(const std::string& path) {
  std::error_code ec;
  const std::string abs = fs::absolute(path, ec).lexically_normal().string();
  if (abs == "/dev/stdout") return 1;
  if (abs == "/dev/stderr") return 2;
  const std::string pid = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/", pid.c_str()}) {
    if (abs.rfind(prefix, 0) != 0) continue;
    const std::string n = abs.substr(prefix.size());
    if (!n.empty() && n.size() < 9 && n.find_first_not_of("0123456789") == std::string::npos)
      return std::stoi(n);
  }
  return -1;
}

// A stream rather than a file to replace: one of this process's descriptors (whatever it leads
// to), anything under /proc, a device or a FIFO (/dev/null, a tty). Written in place.
bool InPlace(const std::string& path) {
  std::error_code ec;
  if (DescriptorOf(path) >= 0) return true;
  if (fs::absolute(path, ec).lexically_normal().string().rfind("/proc/", 0) == 0) return true;
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// The file a write lands in: a symbolic link's target (resolved as far as it exists), else the
// path as given.
fs::path Target(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return path;
  const fs::path resolved = fs::weakly_canonical(path, ec);
  return ec ? fs::path(path) : resolved;
}

fs::path FolderOf(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

// Can `out` be written, as WriteOutput will write it? Touches nothing.
Status CheckWritable(const NamedPath& out) {
  if (DescriptorOf(out.path) >= 0) return Status::Ok();  // written as the descriptor is open
  if (InPlace(out.path))
    return ::access(out.path.c_str(), W_OK) == 0
               ? Status::Ok()
               : CannotWrite(out, errno, "give a file, or a stream you may write");
  const fs::path target = Target(out.path);
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return CannotWrite(out, EISDIR,
                         "give the name of a file, e.g. " + out.option + " " +
                             (fs::path(out.path) / "NAME").string());
    if (::access(target.c_str(), W_OK) != 0)
      return CannotWrite(out, errno, "make it writable (chmod u+w) or give another file");
  } else if (errno != ENOENT) {
    return CannotWrite(out, errno, FolderWayOut(out));
  }
  const fs::path folder = FolderOf(target);
  if (::stat(folder.c_str(), &st) != 0) return CannotWrite(out, errno, FolderWayOut(out));
  if (!S_ISDIR(st.st_mode)) return CannotWrite(out, ENOTDIR, FolderWayOut(out));
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return CannotWrite(out, errno, FolderWayOut(out));
  return Status::Ok();
}

// What makes two paths one file: device and inode where it exists, else the path resolved.
struct FileId {
  bool exists = false, is_dir = false;
  dev_t dev = 0;
  ino_t ino = 0;
  fs::path path;  // absolute; symbolic links and dots resolved as far as the path exists
};

FileId IdOf(const std::string& path) {
  FileId id;
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  id.path = fs::weakly_canonical(absolute, ec);
  if (ec) id.path = absolute.lexically_normal();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.is_dir = S_ISDIR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

bool SameFile(const FileId& a, const FileId& b) {
  if (a.exists != b.exists) return false;
  return a.exists ? a.dev == b.dev && a.ino == b.ino : a.path == b.path;
}

// An existing file somewhere under an existing folder: the folder's reader reads it.
bool InsideFolder(const FileId& file, const FileId& folder) {
  if (!file.exists || !folder.is_dir || SameFile(file, folder)) return false;
  const fs::path rel = file.path.lexically_relative(folder.path);
  return !rel.empty() && *rel.begin() != "..";
}

// `out` against the inputs and the outputs before it (outputs[0, index)).
Status CheckDistinct(size_t index, const std::vector<NamedPath>& outputs,
                     const std::vector<NamedPath>& inputs) {
  const NamedPath& out = outputs[index];
  if (InPlace(out.path)) return Status::Ok();  // /dev/null twice, /dev/stdin in, /dev/stdout out
  const FileId id = IdOf(out.path);
  for (const NamedPath& in : inputs) {
    if (in.path.empty()) continue;
    const FileId input = IdOf(in.path);
    if (SameFile(id, input))
      return Status::InvalidArgument(out.option + " " + out.path +
                                     " is the same file as the input " + in.option + " " + in.path +
                                     ": writing it would overwrite that input; give " +
                                     out.option + " another file");
    if (InsideFolder(id, input))
      return Status::InvalidArgument(out.option + " " + out.path + " is inside the folder " +
                                     in.option + " " + in.path +
                                     ", which is read as input: writing it would overwrite an "
                                     "input; give " + out.option + " a file elsewhere");
  }
  for (size_t j = 0; j < index; ++j) {
    if (outputs[j].path.empty() || !SameFile(id, IdOf(outputs[j].path))) continue;
    return Status::InvalidArgument(outputs[j].option + " " + outputs[j].path + " and " +
                                   out.option + " " + out.path +
                                   " are the same file: one would overwrite the other; give each "
                                   "its own file");
  }
  return Status::Ok();
}

// Writes all of `text` to `fd`; 0 or the errno of the write that failed.
int WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// A new file beside `target` (".NAME.resmem-PID-N", mode 0666 less the umask); -1 and errno set
// when none could be made.
int OpenTempBeside(const fs::path& target, fs::path* temp) {
  const fs::path folder = FolderOf(target);
  for (int i = 0; i < 100; ++i) {
    *temp = folder / ("." + target.filename().string() + ".resmem-" + std::to_string(::getpid()) +
                      "-" + std::to_string(i));
    const int fd = ::open(temp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// A stream (InPlace): no file to replace. A descriptor of this process is written as it is
// (after what the command printed there: /dev/stdout redirected to a file holds the table, then
// the JSON); anything else is opened for writing.
Status WriteInPlace(const NamedPath& out, const std::string& text) {
  const int own = DescriptorOf(out.path);
  if (own >= 0) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
  }
  const int fd = own >= 0 ? own : ::open(out.path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return CannotWrite(out, errno, "give another file");
  int err = WriteAll(fd, text);
  if (own < 0 && ::close(fd) != 0 && err == 0) err = errno;
  return err == 0 ? Status::Ok() : CannotWrite(out, err, "give another file");
}

}  // namespace

Status CheckOutputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    RESMEM_RETURN_IF_ERROR(CheckDistinct(i, outputs, inputs));
    RESMEM_RETURN_IF_ERROR(CheckWritable(outputs[i]));
  }
  return Status::Ok();
}

Status WriteOutput(const NamedPath& out, const std::string& text) {
  if (InPlace(out.path)) return WriteInPlace(out, text);
  const fs::path target = Target(out.path);
  struct stat st;
  const bool exists = ::stat(target.c_str(), &st) == 0;
  fs::path temp;
  const int fd = OpenTempBeside(target, &temp);
  if (fd < 0) return CannotWrite(out, errno, FolderWayOut(out));
  int err = exists && ::fchmod(fd, st.st_mode & 07777) != 0 ? errno : 0;
  if (err == 0) err = WriteAll(fd, text);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), target.c_str()) != 0) err = errno;
  if (err == 0) return Status::Ok();
  ::unlink(temp.c_str());
  return CannotWrite(out, err,
                     "nothing was written there (a file already there is as it was); free some "
                     "space or give another file");
}

}  // namespace resmem::cli
