// The control file of the FUSE-emulated device (`.control` in the mount). Write text commands, one
// per line ('#' starts a comment); read it for the daemon's state and the last error. Each command
// names a fault the kernel really delivers through FUSE (FACTS.md "FUSE"):
//
//   eio DEV OFFSET LENGTH        reads of [OFFSET, OFFSET+LENGTH) fail with EIO; a process touching
//                                those bytes through a mapping gets SIGBUS. Cached pages of the
//                                range are dropped first (fuse_lowlevel_notify_inval_inode).
//   delay DEV OFFSET LENGTH US   reads meeting the range wait US microseconds (slow pages)
//   refuse-mmap DEV              later opens get FOPEN_DIRECT_IO, so mmap(MAP_SHARED) fails ENODEV
//   refuse-open DEV ERRNO        later opens fail with ERRNO (a name, EACCES, or a number)
//   fill DEV OFFSET LENGTH SEED  the device side (the FPGA's stand-in) writes FillPatternWord(SEED, k)
//                                into each 8-byte word k of the range, then invalidates the cached
//                                pages so existing mappings see the new bytes
//   die                          the daemon exits at once: open files give ENOTCONN, untouched
//                                pages of mappings SIGBUS
//   clear [DEV]                  removes every fault (of DEV, or of all devices)
//
// DEV is a device's file name in the mount ("resmem0"). Numbers take ParseSize's forms ("4096",
// "0x1000", "2M"). A bad command is refused with EINVAL and read back as "last_error: ...".
#ifndef RESMEM_MOCK_FUSE_CONTROL_H_
#define RESMEM_MOCK_FUSE_CONTROL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::fuse_emu {

enum class ControlVerb { kEio, kDelay, kRefuseMmap, kRefuseOpen, kFill, kDie, kClear };
const char* ControlVerbName(ControlVerb v);  // "eio", "delay", ...

struct ControlCommand {
  ControlVerb verb = ControlVerb::kClear;
  std::string device;   // "" for die, and for clear of every device
  uint64_t offset = 0;  // eio, delay, fill
  uint64_t length = 0;
  uint64_t delay_us = 0;  // delay
  int error = 0;          // refuse-open: the errno
  uint64_t seed = 0;      // fill
  std::string Describe() const;  // the command as it would be written
};

// Parses every line of `text`. The error names the line, the word and the expected form.
Result<std::vector<ControlCommand>> ParseControl(const std::string& text);

// The help text above, for `resmem fuse --help` and the control file's status.
const char* ControlUsage();

// The word `fill` writes at byte offset 8*k of the device (k counts from the device's start, so
// a consumer can check any block knowing only the seed). Both sides of the black-box test compute
// it; the formula is part of the control protocol and never changes.
inline uint64_t FillPatternWord(uint64_t seed, uint64_t word_index) {
  return (seed * 0x9e3779b97f4a7c15ull) ^ (word_index * 0x100000001b3ull) ^ 0x7265736d656dull;
}

}  // namespace resmem::fuse_emu

#endif  // RESMEM_MOCK_FUSE_CONTROL_H_
