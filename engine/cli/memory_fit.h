// What the GPU commands (bench, stream) are asked to hold at once, against what this machine and
// its GPU have: a size that cannot fit is bad input, refused before anything is measured (exit 2),
// not an allocation that fails once the work began (`bench --sizes 1T`: cudaMalloc, exit 4;
// `stream --block 1G --slots 1048576`: an mmap of 1 PiB, exit 4).
#ifndef RESMEM_ENGINE_CLI_MEMORY_FIT_H_
#define RESMEM_ENGINE_CLI_MEMORY_FIT_H_

#include <cstdint>
#include <string>

#include "backends/api/gpu.h"
#include "backends/api/status.h"

namespace resmem::cli {

// `a` x `b` bytes, UINT64_MAX where that does not fit 64 bits (still more than any memory).
uint64_t SaturatingProduct(uint64_t a, uint64_t b);

// `bytes` of host memory at once fit in this machine's RAM (MemTotal; unreadable: no check).
// `what` names them with their options ("the ring, --block 1G x --slots 1048576,"), `way_out`
// says what to give instead. kInvalidArgument: "WHAT is 1 PiB, more than this machine's 23 GiB
// of RAM (MemTotal); WAY_OUT".
Status CheckFitsRam(const std::string& what, uint64_t bytes, const std::string& way_out);

// `bytes` that fit the RAM (CheckFitsRam) but not what this machine has free now (MemAvailable):
// a warning to print before the work starts ("WHAT is 20 GiB, more than the 17 GiB this machine
// has free now (MemAvailable): the kernel may swap or end the run for memory; WAY_OUT"), not a
// refusal, as the kernel can often free more (caches it counts as not available, swap). Empty
// when they fit or `available` is 0 (MemAvailable could not be read). `available`: the caller's
// host::MemAvailableBytes().
std::string RamWarning(const std::string& what, uint64_t bytes, uint64_t available,
                       const std::string& way_out);

// What bench and stream check of host memory before they start: CheckFitsRam, and where that
// holds but `bytes` are more than the machine has free now, RamWarning printed on stderr as
// "resmem COMMAND: warning: ...".
Status CheckRamBeforeStart(const std::string& command, const std::string& what, uint64_t bytes,
                           const std::string& way_out);

// The same for one allocation on device 0 of `gpu` (its total memory).
Status CheckFitsGpu(Gpu& gpu, const std::string& what, uint64_t bytes, const std::string& way_out);

}  // namespace resmem::cli

#endif  // RESMEM_ENGINE_CLI_MEMORY_FIT_H_
