// What every part of resmem_seq uses (resmem_seq.cc: the sequencer; docs/reliability.md "Random
// syscall sequences"): printf into a string, sysfs and /proc texts, the clock, and the module
// syscalls (both modes unload and load modules of their own).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_UTIL_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_UTIL_H_

#include <string>

namespace resmem::seq {

// printf into a string (up to 1023 bytes).
std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// The whole file ("" when it cannot be read).
std::string ReadText(const std::string& path);
// s without its trailing newlines and spaces.
std::string Trim(std::string s);
// A one-value file (a module parameter): Trim(ReadText(path)).
std::string ReadValue(const std::string& path);
// Seconds on the monotonic clock.
double Now();

// delete_module(name, O_NONBLOCK): 0, or -1 with errno (EWOULDBLOCK, EBUSY: held).
long DeleteModule(const std::string& name);
// Whether /sys/module/NAME/initstate exists.
bool ModuleLoaded(const std::string& name);

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_UTIL_H_
