// Host memory of the simulated machine. Content is sparse (bytes exist only where written), so a
// 188 GB span costs nothing until it is used. Read()/Write() behave as a CPU access through the
// mapping: bounds, signals (SIGBUS, SIGKILL), fault points, and a cost charged to the world's
// virtual clock at the memory type's rate.
//
// Callers that cost a whole operation themselves (Platform::CopyHost, the GPU model's copies) use
// the split interface instead: BeginAccess() once for the span (the checks, signals and fault
// points, consulted once per operation so nth-call triggers count operations), then
// RawRead()/RawWrite() in bounded chunks, which only move bytes and charge nothing.
#ifndef RESMEM_MOCK_SIM_SIM_MEMORY_H_
#define RESMEM_MOCK_SIM_SIM_MEMORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backends/api/memory.h"
#include "backends/api/status.h"
#include "mock/sim/sim_world.h"
#include "mock/sim/sparse_pages.h"

namespace resmem::sim {

enum class AccessKind { kRead, kWrite };

// What an access over [offset, offset+len) may do.
struct SimAccess {
  Status status;            // non-OK: the access ends with this status
  uint64_t valid_bytes = 0; // bytes that move before it ends (len when status is OK)
  double delay_seconds = 0; // injected delay to charge
  // An injected corruption: byte `corrupt_offset` of the span gets `corrupt_xor` (non-zero).
  std::optional<uint64_t> corrupt_offset;
  uint8_t corrupt_xor = 0;
};

class SimHostMemory : public HostMemory {
 public:
  // CPU access: CheckSpan, BeginAccess, move the valid bytes, apply an injected corruption,
  // charge AccessSeconds() plus injected delay. Returns BeginAccess's status.
  Status Read(uint64_t offset, void* out, uint64_t len) final;
  Status Write(uint64_t offset, const void* in, uint64_t len) final;

  // The checks of one access over an in-bounds span (the caller has run CheckSpan). May log to
  // the world's dmesg (an oops). Charges nothing.
  virtual SimAccess BeginAccess(uint64_t offset, uint64_t len, AccessKind kind) = 0;
  // Moves bytes of an in-bounds span that BeginAccess allowed. No checks, no charge.
  virtual void RawRead(uint64_t offset, void* out, uint64_t len) = 0;
  virtual void RawWrite(uint64_t offset, const void* in, uint64_t len) = 0;
  // Writes zeros over the span (a copy of zeros); the default writes a zero buffer in chunks.
  virtual void RawZero(uint64_t offset, uint64_t len);
  // True when [offset, offset+len) is known to read as zeros without reading it (lets copies of
  // untouched spans skip their bytes). False means "unknown", never "not zero".
  virtual bool ReadsAsZero(uint64_t offset, uint64_t len) { return false; }
  // 4 KiB pages of [offset, offset+len) a write would fault in first (anonymous memory); 0 for
  // memory that is already present (device memory, pinned buffers).
  virtual uint64_t UntouchedPages(uint64_t offset, uint64_t len) { return 0; }

  // Seconds a CPU access of `len` bytes costs: reads at HostPerf::ReadBytesPerSecond(type,
  // memcpy_load_bytes), writes at WriteBytesPerSecond(type), plus page_fault_us for each
  // untouched page a write faults in (call before the write).
  double AccessSeconds(uint64_t offset, uint64_t len, AccessKind kind);

  const std::shared_ptr<SimWorld>& world() const { return world_; }

 protected:
  explicit SimHostMemory(std::shared_ptr<SimWorld> world) : world_(std::move(world)) {}
  std::shared_ptr<SimWorld> world_;
};

// For operations that charge their own cost (a GPU copy costed by the link model): access any
// HostMemory without charging the clock. A SimHostMemory goes through BeginAccess (bounds,
// signals, fault points, once per call) and RawRead/RawWrite, with an injected delay still
// charged; any other memory through its own Read/Write.
Status ReadUncharged(HostMemory& mem, uint64_t offset, void* out, uint64_t len);
Status WriteUncharged(HostMemory& mem, uint64_t offset, const void* in, uint64_t len);
// ReadUncharged that moves nothing when the span is known to read as zeros
// (SimHostMemory::ReadsAsZero) and no injected corruption falls in it: then *zeros is set and
// `out` is left as it was. The same checks, fault points and delay either way.
Status ReadUncharged(HostMemory& mem, uint64_t offset, void* out, uint64_t len, bool* zeros);
// WriteUncharged of `len` zeros, with no buffer of them for a SimHostMemory (RawZero).
Status WriteZerosUncharged(HostMemory& mem, uint64_t offset, uint64_t len);

// malloc'ed memory of the simulated process: anonymous, private, write-back. Remembers which
// 4 KiB pages were touched (written): a write to an untouched page costs a page fault. Zero bytes
// written to an untouched page touch it without storing anything.
class SimAnonymousMemory : public SimHostMemory {
 public:
  SimAnonymousMemory(std::shared_ptr<SimWorld> world, uint64_t bytes);
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return address_; }
  std::string Describe() const override;

  SimAccess BeginAccess(uint64_t offset, uint64_t len, AccessKind kind) override;
  void RawRead(uint64_t offset, void* out, uint64_t len) override;
  void RawWrite(uint64_t offset, const void* in, uint64_t len) override;
  void RawZero(uint64_t offset, uint64_t len) override;  // drops content, touches the pages
  bool ReadsAsZero(uint64_t offset, uint64_t len) override;
  uint64_t UntouchedPages(uint64_t offset, uint64_t len) override;

  uint64_t touched_pages() const;  // pages faulted in so far
  uint64_t stored_pages() const;   // pages holding non-zero content

 private:
  void MarkTouched(uint64_t first_page, uint64_t end_page);  // [first, end)
  MappingFacts facts_;
  uint64_t address_ = 0;
  SparsePages<4096> pages_;                          // content: pages with a non-zero byte
  std::map<uint64_t, uint64_t> touched_;             // disjoint page intervals [start, end)
  mutable std::mutex mu_;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_SIM_MEMORY_H_
