// The installed module's file and its signature (module_file.h).
#include "backends/platform/module_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "backends/platform/module_signature.h"
#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxModuleBytes = 1ull << 30;

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Result<std::string> ReadFileBytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    return Status::Errno(err, "cannot open " + path + ": " + std::strerror(err) +
                                  (err == EACCES ? " (run as root)" : ""));
  }
  std::string bytes;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && bytes.size() <= kMaxModuleBytes)
    bytes.append(buf, n);
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) return Status::Errno(err, "reading " + path + " failed: " + std::strerror(err));
  if (bytes.size() > kMaxModuleBytes)
    return Status::InvalidArgument(path + " is larger than 1 GiB: not a kernel module");
  return bytes;
}

// The executable `tool` in one of `tool_path`'s directories, "" when none has it.
std::string FindTool(const std::string& tool, const std::string& tool_path) {
  std::istringstream dirs(tool_path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + tool;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `exe -dc file` and returns what it wrote to stdout; its stderr goes to /dev/null.
Result<std::string> RunDecompressor(const std::string& exe, const std::string& tool,
                                    const std::string& file) {
  int out[2];
  if (pipe(out) != 0) return Status::Errno(errno, "pipe for " + tool + ": " + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(out[0]);
    close(out[1]);
    return Status::Errno(err, "fork for " + tool + ": " + std::strerror(err));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    dup2(out[1], 1);
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, 2);
    close(out[0]);
    const char* argv[] = {tool.c_str(), "-dc", file.c_str(), nullptr};
    execv(exe.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(out[1]);
  std::string bytes;
  char buf[65536];
  ssize_t n;
  bool too_large = false;
  while ((n = read(out[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (bytes.size() + static_cast<size_t>(n) > kMaxModuleBytes) too_large = true;
    if (!too_large) bytes.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (too_large) return Status::InvalidArgument(file + " decompresses to more than 1 GiB: not a kernel module");
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
    return Status::Errno(EIO, tool + " -dc " + file + " failed (" +
                                  (WIFEXITED(wstatus) ? "exit status " + std::to_string(WEXITSTATUS(wstatus))
                                                      : std::string("killed by a signal")) +
                                  "): the file is damaged or not " + tool + "-compressed");
  return bytes;
}

std::string DebianPackageOf(const std::string& tool) {
  return tool == "xz" ? "xz-utils" : tool;  // zstd and gzip are packages of their own name
}

// Lower ranks first: updates/ (dkms's updates/dkms/), then the rest (depmod.d(5)).
int SearchRank(const std::string& relative) { return relative.rfind("updates/", 0) == 0 ? 0 : 1; }

}  // namespace

std::vector<std::string> FindModuleFiles(const std::string& root, const std::string& release,
                                         const std::string& name) {
  const std::string base = "/lib/modules/" + release;
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(root + base, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    bool match = false;
    for (const char* suffix : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"})
      match = match || file == name + suffix;
    if (!match || !it->is_regular_file(ec)) continue;
    const std::string relative = fs::relative(it->path(), root + base, ec).string();
    found.push_back({SearchRank(relative), base + "/" + relative});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

std::string ModuleCompression(const std::string& path) {
  if (EndsWith(path, ".xz")) return "xz";
  if (EndsWith(path, ".zst")) return "zstd";
  if (EndsWith(path, ".gz")) return "gzip";
  return "none";
}

Result<std::string> ReadModuleBytes(const std::string& root, const std::string& path,
                                    const std::string& tool_path) {
  const std::string tool = ModuleCompression(path);
  if (tool == "none") return ReadFileBytes(root + path);
  if (access((root + path).c_str(), R_OK) != 0) {
    const int err = errno;
    return Status::Errno(err, "cannot read " + path + ": " + std::strerror(err) +
                                  (err == EACCES ? " (run as root)" : ""));
  }
  const std::string exe = FindTool(tool, tool_path);
  if (exe.empty())
    return Status::Unavailable(path + " is " + tool + "-compressed and `" + tool +
                               "` is not installed (not in " + tool_path +
                               "): install it (apt-get install " + DebianPackageOf(tool) +
                               ") to read the module's signature");
  return RunDecompressor(exe, tool, root + path);
}

Result<std::string> RenderModuleSignatureSource(const std::string& what, const std::string& root,
                                                const std::string& tool_path) {
  ModuleSignatureFacts facts;
  if (!what.empty() && what[0] == '/') {
    facts.file = what;
  } else {
    auto release = ReadFileBytes(root + "/proc/sys/kernel/osrelease");
    if (!release.ok()) return release.status();
    const std::string rel = TrimBlanks(*release);
    const auto files = FindModuleFiles(root, rel, what);
    if (files.empty())
      return Status::Errno(ENOENT, what + ".ko is not installed for kernel " + rel + ": no " + what +
                                       ".ko, .ko.xz, .ko.zst or .ko.gz under /lib/modules/" + rel +
                                       "/ (install resmem-dkms and the headers of this kernel)");
    facts.file = files[0];
    facts.also.assign(files.begin() + 1, files.end());
  }
  facts.compression = ModuleCompression(facts.file);
  RESMEM_ASSIGN_OR_RETURN(std::string bytes, ReadModuleBytes(root, facts.file, tool_path));
  auto sig = ParseModuleSignature(bytes);
  if (!sig.ok()) {
    facts.state = "malformed";
    facts.error = sig.status().message();
  } else {
    facts.state = sig->is_signed ? "yes" : "no";
    facts.signature = *sig;
  }
  return RenderModuleSignatureFacts(facts);
}

}  // namespace resmem
