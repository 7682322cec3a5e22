#include "engine/transfer/block_check.h"

#include <vector>

#include "backends/cuda/block_pattern.h"
#include "backends/cuda/cuda_gpu.h"

namespace resmem::transfer {
namespace {
constexpr uint64_t kPiece = 1 << 20;  // bytes generated at a time for unaddressable memory

Status CheckLength(uint64_t length) {
  if (length % 8 != 0)
    return Status::InvalidArgument("pattern length " + std::to_string(length) +
                                   " is not a multiple of 8 bytes");
  return Status::Ok();
}

// The pattern for words [first_word, first_word + n) of a block, into out.
void Generate(uint64_t* out, uint64_t first_word, uint64_t n, uint64_t seq, uint64_t fill_seed) {
  for (uint64_t i = 0; i < n; ++i) out[i] = pattern::Word(first_word + i, seq, fill_seed);
}
}  // namespace

Status FillPattern(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq,
                   uint64_t fill_seed) {
  RESMEM_RETURN_IF_ERROR(CheckLength(length));
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem, offset, length, "fill pattern"));
  if (mem.data()) {
    pattern::Fill(mem.data() + offset, length, seq, fill_seed);
    return Status::Ok();
  }
  std::vector<uint64_t> buf(kPiece / 8);
  for (uint64_t done = 0; done < length; done += kPiece) {
    uint64_t n = std::min<uint64_t>(kPiece, length - done);
    Generate(buf.data(), done / 8, n / 8, seq, fill_seed);
    RESMEM_RETURN_IF_ERROR(mem.Write(offset + done, buf.data(), n));
  }
  return Status::Ok();
}

Status StampPattern(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq) {
  RESMEM_RETURN_IF_ERROR(CheckLength(length));
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem, offset, length, "stamp pattern"));
  if (mem.data()) {
    pattern::Stamp(mem.data() + offset, length, seq);
    return Status::Ok();
  }
  for (uint64_t w = 0; w < length / 8; w += pattern::kWordsPerPage) {
    uint64_t v = pattern::Word(w, seq, 0);
    RESMEM_RETURN_IF_ERROR(mem.Write(offset + w * 8, &v, 8));
  }
  return Status::Ok();
}

uint64_t PatternFnv(uint64_t length, uint64_t seq, uint64_t fill_seed) {
  std::vector<uint64_t> buf(kPiece / 8);
  uint64_t sum = 0xcbf29ce484222325ull;
  for (uint64_t done = 0; done < length; done += kPiece) {
    uint64_t n = std::min<uint64_t>(kPiece, length - done);
    Generate(buf.data(), done / 8, n / 8, seq, fill_seed);
    sum = Fnv1a64(buf.data(), n, sum);
  }
  return sum;
}

Result<uint64_t> DeviceMismatches(Gpu& gpu, DeviceBuffer& dev, uint64_t offset, uint64_t length,
                                  uint64_t seq, uint64_t fill_seed) {
  RESMEM_RETURN_IF_ERROR(CheckLength(length));
  if (auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu))
    return cuda->CountPatternMismatches(dev, offset, length, seq, fill_seed);
  RESMEM_ASSIGN_OR_RETURN(uint64_t sum, gpu.DeviceChecksum(dev, offset, length));
  return static_cast<uint64_t>(sum != PatternFnv(length, seq, fill_seed));
}

Result<uint64_t> HostMismatches(HostMemory& mem, uint64_t offset, uint64_t length, uint64_t seq,
                                uint64_t fill_seed) {
  RESMEM_RETURN_IF_ERROR(CheckLength(length));
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem, offset, length, "check pattern"));
  if (mem.data()) return pattern::CountMismatches(mem.data() + offset, length, seq, fill_seed);
  std::vector<uint64_t> buf(kPiece / 8);
  uint64_t bad = 0;
  for (uint64_t done = 0; done < length; done += kPiece) {
    uint64_t n = std::min<uint64_t>(kPiece, length - done);
    RESMEM_RETURN_IF_ERROR(mem.Read(offset + done, buf.data(), n));
    for (uint64_t i = 0; i < n / 8; ++i)
      bad += buf[i] != pattern::Word(done / 8 + i, seq, fill_seed);
  }
  return bad;
}

}  // namespace resmem::transfer
