// Data checks shared by bench, stream and calibrate: fill host memory with the block pattern
// (backends/cuda/block_pattern.h) and count what arrived wrong on the device. On the CUDA backend
// the device count runs as a kernel over the device buffer; on any other Gpu (the simulator) the
// device's FNV-1a checksum is compared with the pattern's, so a bad block counts as 1.
#ifndef RESMEM_ENGINE_TRANSFER_BLOCK_CHECK_H_
#define RESMEM_ENGINE_TRANSFER_BLOCK_CHECK_H_

#include <cstdint>

#include "backends/api/gpu.h"

namespace resmem::transfer {

// Writes the pattern for (seq, fill_seed) into mem[offset, offset+length) (length a multiple of
// 8); through data() when addressable, else through Write.
Status FillPattern(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq,
                   uint64_t fill_seed);
// Rewrites only the per-page stamps (cheap: one word per 4 KiB).
Status StampPattern(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq);
// Words (CUDA) or blocks (other Gpus) of dev[offset, +length) that differ from the pattern.
Result<uint64_t> DeviceMismatches(Gpu& gpu, DeviceBuffer& dev, uint64_t offset, uint64_t length,
                                  uint64_t seq, uint64_t fill_seed);
// Words of mem[offset, +length) that differ from the pattern.
Result<uint64_t> HostMismatches(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq,
                                uint64_t fill_seed);
// FNV-1a 64 of the pattern's bytes.
uint64_t PatternFnv(uint64_t length, uint64_t seq, uint64_t fill_seed);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_BLOCK_CHECK_H_
