// The host kinds as the simulator has them (modelled_memory.h).
#include "backends/host/modelled_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace resmem::host {
namespace {

constexpr uint64_t k2M = 2ull << 20;

// Anonymous bytes behind a kind's modelled facts; unmapped when destroyed.
class ModelledMemory : public HostMemory {
 public:
  ModelledMemory(void* base, MappingFacts facts) : base_(static_cast<uint8_t*>(base)), f_(std::move(facts)) {}
  ~ModelledMemory() override { munmap(base_, f_.length); }
  uint64_t size() const override { return f_.length; }
  const MappingFacts& facts() const override { return f_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(base_); }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memcpy(out, base_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    std::memcpy(base_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override { return "anonymous bytes, modelled as " + f_.Describe(); }

 private:
  uint8_t* base_;
  MappingFacts f_;
};

}  // namespace

MappingFacts ModelledFacts(HostKind kind, uint64_t bytes, const HostMapOptions& o) {
  MappingFacts f;
  f.length = bytes;
  f.writable = o.writable;
  f.resident = o.populate && o.writable;
  switch (kind) {
    case HostKind::kAnonymous:
      f.backing = Backing::kAnonymous;
      f.transparent_huge = o.transparent_huge == 1;
      break;
    case HostKind::kMemfd:
    case HostKind::kShm: f.backing = Backing::kShmem; f.shared = true; break;
    case HostKind::kHugetlb:
      f.backing = Backing::kHugetlb;
      f.page_size = o.huge_page_size ? o.huge_page_size : k2M;
      break;
    case HostKind::kFile: f.backing = Backing::kFile; f.shared = true; break;
    case HostKind::kFilePrivate: f.backing = Backing::kFile; break;
  }
  f.origin = "modelled";
  return f;
}

Result<std::unique_ptr<HostMemory>> MapModelledMemory(HostKind kind, uint64_t bytes,
                                                      const HostMapOptions& o) {
  if (bytes == 0) return Status::InvalidArgument("a modelled mapping of 0 bytes: give a size");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return Status::Errno(errno, "mmap of " + std::to_string(bytes) + " anonymous bytes behind a modelled " +
                                        HostKindName(kind) + " mapping");
  return std::unique_ptr<HostMemory>(std::make_unique<ModelledMemory>(p, ModelledFacts(kind, bytes, o)));
}

}  // namespace resmem::host
