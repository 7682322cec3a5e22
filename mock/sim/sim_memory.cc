#include "mock/sim/sim_memory.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace resmem::sim {
namespace {

constexpr uint64_t kPage = 4096;  // SimAnonymousMemory's pages (SparsePages<4096>)

}  // namespace

double SimHostMemory::AccessSeconds(uint64_t offset, uint64_t len, AccessKind kind) {
  if (len == 0) return 0;
  const HostPerf& perf = world_->spec.perf;
  const MemoryType type = facts().memory_type;
  const double rate = kind == AccessKind::kRead
                          ? perf.ReadBytesPerSecond(type, perf.memcpy_load_bytes)
                          : perf.WriteBytesPerSecond(type);
  double seconds = rate > 0 ? static_cast<double>(len) / rate : 0;
  if (kind == AccessKind::kWrite)
    seconds += static_cast<double>(UntouchedPages(offset, len)) * perf.page_fault_us * 1e-6;
  return seconds;
}

Status SimHostMemory::Read(uint64_t offset, void* out, uint64_t len) {
  RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
  if (len == 0) return Status::Ok();
  SimAccess access = BeginAccess(offset, len, AccessKind::kRead);
  const uint64_t n = std::min(access.valid_bytes, len);
  if (n) RawRead(offset, out, n);
  if (access.corrupt_offset && *access.corrupt_offset < n)
    static_cast<uint8_t*>(out)[*access.corrupt_offset] ^= access.corrupt_xor;
  world_->clock->Charge(AccessSeconds(offset, n, AccessKind::kRead) + access.delay_seconds);
  return access.status;
}

Status SimHostMemory::Write(uint64_t offset, const void* in, uint64_t len) {
  RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
  if (len == 0) return Status::Ok();
  SimAccess access = BeginAccess(offset, len, AccessKind::kWrite);
  const uint64_t n = std::min(access.valid_bytes, len);
  // Cost first: it depends on which pages are still untouched.
  const double seconds = AccessSeconds(offset, n, AccessKind::kWrite) + access.delay_seconds;
  if (n) RawWrite(offset, in, n);
  if (access.corrupt_offset && *access.corrupt_offset < n) {
    uint8_t b = 0;
    RawRead(offset + *access.corrupt_offset, &b, 1);
    b ^= access.corrupt_xor;
    RawWrite(offset + *access.corrupt_offset, &b, 1);
  }
  world_->clock->Charge(seconds);
  return access.status;
}

void SimHostMemory::RawZero(uint64_t offset, uint64_t len) {
  static const std::array<uint8_t, 64 * 1024> kZeros{};
  while (len) {
    const uint64_t n = std::min<uint64_t>(len, kZeros.size());
    RawWrite(offset, kZeros.data(), n);
    offset += n;
    len -= n;
  }
}

Status ReadUncharged(HostMemory& mem, uint64_t offset, void* out, uint64_t len) {
  return ReadUncharged(mem, offset, out, len, nullptr);
}

Status ReadUncharged(HostMemory& mem, uint64_t offset, void* out, uint64_t len, bool* zeros) {
  if (zeros) *zeros = false;
  auto* sim = dynamic_cast<SimHostMemory*>(&mem);
  if (!sim) return mem.Read(offset, out, len);
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem, offset, len, "read"));
  if (len == 0) return Status::Ok();
  SimAccess access = sim->BeginAccess(offset, len, AccessKind::kRead);
  const uint64_t n = std::min(access.valid_bytes, len);
  const bool corrupt = access.corrupt_offset && *access.corrupt_offset < n;
  if (zeros && !corrupt && sim->ReadsAsZero(offset, n)) {
    *zeros = true;
  } else {
    if (n) sim->RawRead(offset, out, n);
    if (corrupt) static_cast<uint8_t*>(out)[*access.corrupt_offset] ^= access.corrupt_xor;
  }
  sim->world()->clock->Charge(access.delay_seconds);
  return access.status;
}

namespace {

// WriteUncharged of `in`, or of `len` zeros when `in` is null.
Status WriteOrZeroUncharged(HostMemory& mem, uint64_t offset, const void* in, uint64_t len) {
  auto* sim = dynamic_cast<SimHostMemory*>(&mem);
  if (!sim && in) return mem.Write(offset, in, len);
  if (!sim) {  // one Write, as WriteUncharged of a buffer of zeros makes
    const std::vector<uint8_t> zeros(static_cast<size_t>(len), 0);
    return mem.Write(offset, zeros.data(), len);
  }
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem, offset, len, "write"));
  if (len == 0) return Status::Ok();
  SimAccess access = sim->BeginAccess(offset, len, AccessKind::kWrite);
  const uint64_t n = std::min(access.valid_bytes, len);
  if (n && in) sim->RawWrite(offset, in, n);
  if (n && !in) sim->RawZero(offset, n);
  if (access.corrupt_offset && *access.corrupt_offset < n) {
    uint8_t b = 0;
    sim->RawRead(offset + *access.corrupt_offset, &b, 1);
    b ^= access.corrupt_xor;
    sim->RawWrite(offset + *access.corrupt_offset, &b, 1);
  }
  sim->world()->clock->Charge(access.delay_seconds);
  return access.status;
}

}  // namespace

Status WriteUncharged(HostMemory& mem, uint64_t offset, const void* in, uint64_t len) {
  return WriteOrZeroUncharged(mem, offset, in, len);
}

Status WriteZerosUncharged(HostMemory& mem, uint64_t offset, uint64_t len) {
  return WriteOrZeroUncharged(mem, offset, nullptr, len);
}

SimAnonymousMemory::SimAnonymousMemory(std::shared_ptr<SimWorld> world, uint64_t bytes)
    : SimHostMemory(std::move(world)) {
  facts_.length = bytes;
  facts_.shared = false;
  facts_.backing = Backing::kAnonymous;
  facts_.memory_type = MemoryType::kWriteBack;
  facts_.page_size = kPage;
  facts_.origin = "sim";
  address_ = world_->AllocateVa(bytes);
}

std::string SimAnonymousMemory::Describe() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "anonymous %s at 0x%" PRIx64 " (sim)",
                FormatSize(facts_.length).c_str(), address_);
  return buf;
}

SimAccess SimAnonymousMemory::BeginAccess(uint64_t offset, uint64_t len, AccessKind kind) {
  // Ordinary process memory: every in-bounds access succeeds. No fault point belongs to it.
  SimAccess access;
  access.valid_bytes = len;
  return access;
}

void SimAnonymousMemory::RawRead(uint64_t offset, void* out, uint64_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  pages_.Read(offset, static_cast<uint8_t*>(out), len);  // untouched or zero-filled: zeros
}

void SimAnonymousMemory::RawWrite(uint64_t offset, const void* in, uint64_t len) {
  if (len == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  pages_.Write(offset, static_cast<const uint8_t*>(in), len);
  MarkTouched(offset / kPage, (offset + len + kPage - 1) / kPage);
}

void SimAnonymousMemory::RawZero(uint64_t offset, uint64_t len) {
  if (len == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  pages_.Zero(offset, len);
  MarkTouched(offset / kPage, (offset + len + kPage - 1) / kPage);
}

bool SimAnonymousMemory::ReadsAsZero(uint64_t offset, uint64_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  return pages_.NoneIn(offset, len);
}

void SimAnonymousMemory::MarkTouched(uint64_t first, uint64_t end) {
  // Merge [first, end) into the disjoint interval set (mu_ held).
  auto it = touched_.upper_bound(first);
  if (it != touched_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= first) {
      first = prev->first;
      end = std::max(end, prev->second);
      it = touched_.erase(prev);
    }
  }
  while (it != touched_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = touched_.erase(it);
  }
  touched_.emplace(first, end);
}

uint64_t SimAnonymousMemory::UntouchedPages(uint64_t offset, uint64_t len) {
  if (len == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t first = offset / kPage;
  const uint64_t end = (offset + len + kPage - 1) / kPage;
  uint64_t covered = 0;
  auto it = touched_.upper_bound(first);
  if (it != touched_.begin()) --it;
  for (; it != touched_.end() && it->first < end; ++it) {
    const uint64_t a = std::max(first, it->first);
    const uint64_t b = std::min(end, it->second);
    if (b > a) covered += b - a;
  }
  return (end - first) - covered;
}

uint64_t SimAnonymousMemory::touched_pages() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [a, b] : touched_) n += b - a;
  return n;
}

uint64_t SimAnonymousMemory::stored_pages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pages_.page_count();
}

}  // namespace resmem::sim
