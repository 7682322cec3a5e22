#include "engine/transfer/direct_copy.h"

#include <algorithm>
#include <string>

#include "backends/cuda/cuda_gpu.h"

namespace resmem::transfer {
namespace {

uint32_t BaseFlags(const MappingFacts& f) { return f.writable ? 0u : static_cast<uint32_t>(kRegisterReadOnly); }

}  // namespace

Result<std::unique_ptr<DirectCopy>> DirectCopy::Open(Path p, Gpu& gpu, HostMemory& mem,
                                                     const TransferOptions& o,
                                                     const Refuse& refuse, PathChoice* choice) {
  std::unique_ptr<DirectCopy> d(new DirectCopy(p, gpu, mem, o.register_chunk));
  switch (p) {
    case Path::kRegisteredDirect:
    case Path::kZeroCopyMapped:
      RESMEM_RETURN_IF_ERROR(d->RegisterWhole(refuse, choice));
      return d;
    case Path::kRegisteredChunked:
      RESMEM_RETURN_IF_ERROR(d->RegisterPieces(refuse, choice));
      return d;
    case Path::kPageableAccess:
      RESMEM_RETURN_IF_ERROR(d->CheckPageableAccess(refuse));
      return d;
    case Path::kPageable:
      if (!mem.facts().readable)
        return refuse(0, Status::Unsupported("the mapping is not readable by the CPU"));
      return d;
    case Path::kStaged:
      break;
  }
  return Status::Internal("unknown path");
}

DirectCopy::~DirectCopy() {
  for (uint64_t off : registered_) gpu_.Unregister(mem_, off);
}

Status DirectCopy::RegisterWhole(const Refuse& refuse, PathChoice* choice) {
  const MappingFacts& f = mem_.facts();
  uint32_t extra = path_ == Path::kZeroCopyMapped ? static_cast<uint32_t>(kRegisterMapped) : 0u;
  if (path_ == Path::kZeroCopyMapped && !dynamic_cast<cuda::CudaGpu*>(&gpu_))
    return refuse(0, Status::Unavailable(gpu_.name() + " cannot launch the copy kernel"));
  std::vector<uint32_t> tries = {BaseFlags(f) | extra};
  if (f.vm_pfnmap) tries.push_back(BaseFlags(f) | extra | kRegisterIoMemory);
  Status last;
  for (uint32_t flags : tries) {
    last = gpu_.Register(mem_, 0, mem_.size(), flags);
    if (last.ok()) {
      registered_.push_back(0);
      choice->register_flags = flags;
      choice->detail = "cudaHostRegister " + RegisterFlagsName(flags);
      return last;
    }
    refuse(flags, last);
  }
  return last;
}

Status DirectCopy::RegisterPieces(const Refuse& refuse, PathChoice* choice) {
  const MappingFacts& f = mem_.facts();
  if (mem_.size() <= register_chunk_)
    return refuse(0, Status::Unsupported("the span (" + FormatSize(mem_.size()) +
                                         ") fits in one piece of " + FormatSize(register_chunk_) +
                                         ": the same call registered-direct made"));
  uint32_t flags = BaseFlags(f) | (f.vm_pfnmap ? static_cast<uint32_t>(kRegisterIoMemory) : 0u);
  std::vector<uint64_t> pieces;
  Status st = cuda::RegisterInChunks(gpu_, mem_, 0, mem_.size(), flags, register_chunk_, &pieces);
  if (!st.ok()) return refuse(flags, st);
  registered_ = pieces;
  choice->register_flags = flags;
  choice->detail = std::to_string(pieces.size()) + " pieces of " + FormatSize(register_chunk_);
  return st;
}

Status DirectCopy::CheckPageableAccess(const Refuse& refuse) {
  if (!dynamic_cast<cuda::CudaGpu*>(&gpu_))
    return refuse(0, Status::Unavailable(gpu_.name() + " cannot launch the copy kernel"));
  auto a = gpu_.Attributes(0);
  if (!a.ok()) return refuse(0, a.status());
  if (!a->pageable_memory_access)
    return refuse(0, Status::Unsupported("the device reports PageableMemoryAccess 0"));
  return Status::Ok();
}

Result<CopyOutcome> DirectCopy::Copy(const CopyRequest& c) {
  CopyOutcome out;
  switch (path_) {
    case Path::kRegisteredChunked:
      return CopyChunked(c);
    case Path::kZeroCopyMapped:
    case Path::kPageableAccess: {
      auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu_);
      RESMEM_ASSIGN_OR_RETURN(CopyStats s, cuda->CopyMapped(c.dir, mem_, c.host_offset, *c.dev,
                                                            c.dev_offset, c.length));
      out.modelled_seconds = s.seconds;
      return out;
    }
    default: {
      RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu_.Copy(c.dir, mem_, c.host_offset, *c.dev,
                                                     c.dev_offset, c.length));
      out.modelled_seconds = s.seconds;
      return out;
    }
  }
}

Result<CopyOutcome> DirectCopy::CopyChunked(const CopyRequest& c) {
  CopyOutcome out;
  // Split at piece boundaries: one DMA never spans two registrations.
  for (uint64_t done = 0; done < c.length;) {
    uint64_t at = c.host_offset + done;
    uint64_t piece_end = (at / register_chunk_ + 1) * register_chunk_;
    uint64_t n = std::min(c.length - done, piece_end - at);
    RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                            gpu_.Copy(c.dir, mem_, at, *c.dev, c.dev_offset + done, n));
    out.modelled_seconds += s.seconds;
    done += n;
  }
  return out;
}

}  // namespace resmem::transfer
