// The paths without staging (engine-internal strategy, copy_strategy.h): the driver's DMA, or a
// kernel, reaches the host mapping itself.
//   registered-direct   one cudaHostRegister of the whole span (with IoMemory where a pfnmap
//                       mapping needs it), then one DMA per copy
//   registered-chunked  the span registered in pieces of register_chunk (one call of 512 GiB or
//                       more fails with 2 on r580 drivers; FACTS.md); a copy is split at piece
//                       boundaries, so no DMA spans two registrations
//   zero-copy-mapped    registered with Mapped; a kernel reads/writes the mapping over PCIe
//   pageable-access     a kernel reads the host pointer directly (PageableMemoryAccess)
//   pageable            cudaMemcpy from unregistered memory: the driver stages it itself
// Contract: Open registers what its path needs, or refuses; the destructor unregisters it.
// Copy reports the backend's modelled time (what a virtual clock charges).
#ifndef RESMEM_ENGINE_TRANSFER_DIRECT_COPY_H_
#define RESMEM_ENGINE_TRANSFER_DIRECT_COPY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/api/gpu.h"
#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {

class DirectCopy : public CopyStrategy {
 public:
  // Sets path `p` (any but Path::kStaged) up for `mem`. Each refused attempt is recorded through
  // `refuse` (registered-direct and zero-copy-mapped try the default flags, then IoMemory on a
  // pfnmap mapping); on success the registration's flags and a detail go into *choice.
  static Result<std::unique_ptr<DirectCopy>> Open(Path p, Gpu& gpu, HostMemory& mem,
                                                  const TransferOptions& o, const Refuse& refuse,
                                                  PathChoice* choice);
  ~DirectCopy() override;  // unregisters what Open registered
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

 private:
  DirectCopy(Path p, Gpu& gpu, HostMemory& mem, uint64_t register_chunk)
      : path_(p), gpu_(gpu), mem_(mem), register_chunk_(register_chunk) {}
  // registered-direct and zero-copy-mapped: one registration of the whole span.
  Status RegisterWhole(const Refuse& refuse, PathChoice* choice);
  // registered-chunked: the span in pieces of register_chunk_.
  Status RegisterPieces(const Refuse& refuse, PathChoice* choice);
  // pageable-access: the device must report PageableMemoryAccess.
  Status CheckPageableAccess(const Refuse& refuse);
  Result<CopyOutcome> CopyChunked(const CopyRequest& c);

  const Path path_;
  Gpu& gpu_;
  HostMemory& mem_;
  const uint64_t register_chunk_;
  std::vector<uint64_t> registered_;  // offsets of registrations to undo
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_DIRECT_COPY_H_
