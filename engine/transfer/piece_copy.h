// Staged copies moved by the SMs in pieces (engine-internal strategy, copy_strategy.h;
// TransferOptions::staging_sm_copy, staging_sm_copy_upto). Piece p of the copy is numbered
// t = base + p + 1 and lives in ring slot p % slots. Lane 0 launches the kernel and watches it;
// every lane (lane 0 once the launch returned) claims pieces in order:
//   host to device: wait until the kernel consumed the slot's previous piece (p >= slots), fill
//                   the slot (cached stores, CLDEMOTEd), set the CPU word of the slot to t;
//   device to host: wait until the kernel set the slot's word to t, drain the slot into the
//                   mapping (CLDEMOTE the ring's lines), set the CPU word to t.
// The copy is done when the kernel's done word reads base + n and every piece was moved.
//
// Contract: takes single copies whose length is a multiple of 16, every one with
// staging_sm_copy, else host-to-device ones up to staging_sm_copy_upto. Declines a copy, with
// nothing moved to its destination, when the kernel did not start within staging_sm_start_us
// (a program's kernel holds the SMs): the caller then copies it by DMAs. Lane 0 looks at the
// kernel's stream while it waits for any of the kernel's words, so a kernel that dies mid-copy
// (a trap anywhere in the context) ends the copy with the stream's error and every lane leaves.
// On an error the kernel still waiting for pieces is told to give up and its stream is waited
// for. The piece (staging_sm_piece) is a multiple of 4 KiB: TransferEngine::Open refuses others.
#ifndef RESMEM_ENGINE_TRANSFER_PIECE_COPY_H_
#define RESMEM_ENGINE_TRANSFER_PIECE_COPY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

class PieceCopy : public CopyStrategy {
 public:
  // With staging_sm_copy or staging_sm_copy_upto: the strategy over a piece ring of the staging
  // ring's size, with a note appended to *note (or, without a ring, the reason: the copies then
  // go by copy-engine DMAs, and Open returns null). Null without either option.
  static std::unique_ptr<PieceCopy> Open(Staging& s, std::string* note);
  ~PieceCopy() override;  // frees the piece ring
  bool Takes(const CopyRequest& c) const override;
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

 private:
  PieceCopy(Staging& s, cuda::CudaGpu::PieceRing ring)
      : s_(s), ring_(std::move(ring)), seq_(s.o.staging_first_number) {}

  Staging& s_;
  // The piece ring and the number of the next copy's first piece - 1.
  cuda::CudaGpu::PieceRing ring_;
  uint32_t seq_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_PIECE_COPY_H_
