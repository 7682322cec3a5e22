// What every part of resmem_seq uses (resmem_seq_util.h).
#include "kmod/tests/resmem_seq_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace resmem::seq {

std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string ReadValue(const std::string& path) { return Trim(ReadText(path)); }

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long DeleteModule(const std::string& name) { return syscall(SYS_delete_module, name.c_str(), O_NONBLOCK); }

bool ModuleLoaded(const std::string& name) {
  struct stat st;
  return stat(("/sys/module/" + name + "/initstate").c_str(), &st) == 0;
}

}  // namespace resmem::seq
