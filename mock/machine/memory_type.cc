// Memory types (MTRR x PAT) and the host memory performance model.
#include <algorithm>
#include <cmath>

#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

// Combines two MTRR types that both match an address (Intel SDM vol. 3A, 11.11.4.1
// "MTRR Precedences"): equal types stay; UC with anything is UC; WT with WB is WT (not
// representable in MemoryType, which has no WT, so it never arises here); any other mix is
// undefined by the SDM and is modelled as UC, the conservative answer.
MemoryType Combine(MemoryType a, MemoryType b) {
  if (a == b) return a;
  return MemoryType::kUncached;
}

// Fixed-range MTRRs below 1 MiB, as BIOSes program them: WB for the 640 KiB of conventional
// RAM, UC for the legacy VGA window and the option/BIOS ROM area [0xA0000, 0x100000).
// A machine file may give the fixed ranges itself (MtrrConfig::fixed); an address below 1 MiB
// that none of them covers takes the default type, as the hardware does (SDM 11.11.2.2).
MemoryType FixedRangeType(const MtrrConfig& mtrr, uint64_t addr) {
  if (mtrr.fixed.empty()) return addr < 0xA0000 ? MemoryType::kWriteBack : MemoryType::kUncached;
  for (const auto& r : mtrr.fixed)
    if (addr >= r.base && addr - r.base < r.size) return r.type;
  return mtrr.default_type;
}

// The next address above `addr` where MtrrTypeAt may change (range edges), or UINT64_MAX.
uint64_t NextEdge(const MtrrConfig& mtrr, uint64_t addr) {
  uint64_t next = UINT64_MAX;
  auto consider = [&](uint64_t edge) {
    if (edge > addr && edge < next) next = edge;
  };
  consider(0xA0000);
  consider(0x100000);
  for (const auto& r : mtrr.fixed) {
    consider(r.base);
    consider(r.base + r.size);
  }
  for (const auto& r : mtrr.variable) {
    consider(r.base);
    if (r.base + r.size > r.base) consider(r.base + r.size);
  }
  return next;
}

}  // namespace

MemoryType MtrrTypeAt(const MtrrConfig& mtrr, uint64_t addr) {
  // MTRRs disabled (MTRRdefType.E = 0): all of physical memory is UC (SDM 11.11.2.1).
  if (!mtrr.enabled) return MemoryType::kUncached;
  if (addr < 0x100000) return FixedRangeType(mtrr, addr);
  bool matched = false;
  MemoryType type = mtrr.default_type;
  for (const auto& r : mtrr.variable) {
    if (addr < r.base || addr - r.base >= r.size) continue;
    type = matched ? Combine(type, r.type) : r.type;
    matched = true;
  }
  return type;
}

namespace {

std::string MemRangeText(uint64_t a, uint64_t b) {
  return "[mem " + HexAddress(a) + "-" + HexAddress(b - 1) + "]";
}

// Why [a, b), a part of uniform type t that is not write-back, is not: the variable MTRR that
// makes it so, or the default type where no variable MTRR covers it.
std::string WhyNotWriteBack(const MtrrConfig& mtrr, uint64_t a, uint64_t b, MemoryType t) {
  if (a < 0x100000)
    return "the fixed-range MTRRs make " + MemRangeText(a, b) + " " + MemoryTypeName(t);
  for (size_t i = 0; i < mtrr.variable.size(); ++i) {
    const auto& r = mtrr.variable[i];
    if (r.type == MemoryType::kWriteBack || a < r.base || a - r.base >= r.size) continue;
    return "variable MTRR reg" + std::to_string(i) + " (base " + HexAddress(r.base) + ", size " +
           FormatSize(r.size) + ") makes " + MemRangeText(a, b) + " " +
           (r.type == MemoryType::kUnknown && !r.type_name.empty() ? r.type_name : MemoryTypeName(r.type));
  }
  return "no write-back MTRR covers " + MemRangeText(a, b) + " and the default type is " +
         MemoryTypeName(mtrr.default_type);
}

}  // namespace

MtrrCoverage MtrrWriteBackOver(const MtrrConfig& mtrr, uint64_t start, uint64_t end) {
  if (!mtrr.enabled) return {false, "the MTRRs are disabled (MTRRdefType.E = 0): all memory is UC"};
  if (end <= start) end = start + 1;
  for (uint64_t a = start; a < end;) {
    const uint64_t b = std::min(NextEdge(mtrr, a), end);
    const MemoryType t = MtrrTypeAt(mtrr, a);
    if (t != MemoryType::kWriteBack) return {false, WhyNotWriteBack(mtrr, a, b, t)};
    a = b;
  }
  const bool any_wb_range = std::any_of(mtrr.variable.begin(), mtrr.variable.end(), [](const MtrrRange& r) {
    return r.type == MemoryType::kWriteBack;
  });
  return {true, any_wb_range ? "write-back MTRRs cover all of it"
                             : "no MTRR makes it uncachable (the default type is write-back)"};
}

MtrrConfig MtrrFromProcMtrr(const std::vector<MtrrLine>& lines, std::vector<std::string>* left_out) {
  MtrrConfig c;
  bool any_wb = false;
  if (left_out) left_out->assign(lines.size(), "");
  for (size_t k = 0; k < lines.size(); ++k) {
    const MtrrLine& m = lines[k];
    any_wb = any_wb || m.type == MemoryType::kWriteBack;
    std::string why;
    if (m.size == 0 || (m.size & (m.size - 1)) || (m.base & (m.size - 1)))
      why = "size not a power of two or base not aligned to it";
    else if (m.type == MemoryType::kUnknown && m.type_name != "write-through" && m.type_name != "write-protect")
      why = "unknown type '" + m.type_name + "'";
    if (!why.empty()) {
      if (left_out) (*left_out)[k] = why;
      continue;
    }
    MtrrRange r;
    r.base = m.base;
    r.size = m.size;
    r.type = m.type;
    if (m.type == MemoryType::kUnknown) r.type_name = m.type_name;
    c.variable.push_back(r);
  }
  c.default_type = any_wb ? MemoryType::kUncached : MemoryType::kWriteBack;
  return c;
}

MemoryType EffectiveMemoryType(const MachineSpec& spec, uint64_t start, uint64_t end,
                               MemoryType requested) {
  if (end <= start) end = start + 1;
  // The MTRR type over the whole range: uniform, or the combination of its parts
  // (arch/x86/kernel/cpu/mtrr/generic.c, mtrr_type_lookup with its "uniform" result).
  MemoryType mtrr_type = MtrrTypeAt(spec.mtrr, start);
  bool uniform = true;
  for (uint64_t a = NextEdge(spec.mtrr, start); a < end; a = NextEdge(spec.mtrr, a)) {
    const MemoryType t = MtrrTypeAt(spec.mtrr, a);
    if (t != mtrr_type) {
      uniform = false;
      mtrr_type = Combine(mtrr_type, t);
    }
  }
  if (!spec.pat_enabled) {
    // No PAT ("nopat"): a WB request gets whatever the MTRRs say; WC cannot be expressed with
    // PCD/PWT alone and becomes UC- (arch/x86/mm/pat/memtype.c, pat_disable/init_cache_modes).
    if (requested == MemoryType::kWriteBack) return uniform ? mtrr_type : MemoryType::kUncached;
    if (requested == MemoryType::kWriteCombining) return MemoryType::kUncachedMinus;
    return requested;
  }
  if (requested == MemoryType::kWriteBack) {
    // arch/x86/mm/pat/memtype.c, pat_x_mtrr_type(): a WB request is granted only when the MTRR
    // type of [start, end) is WB; otherwise UC-. 2.6.32 did the same in reserve_memtype() over
    // the whole VMA, which is why the size of the reservation (not of the copy) decides speed
    // (seed 000: fast up to 64 GB reserved, ~80 MB/s at 128 and 188 GB).
    return MtrrWriteBackOver(spec.mtrr, start, end).write_back ? MemoryType::kWriteBack
                                                               : MemoryType::kUncachedMinus;
  }
  return requested;  // WC, UC, UC- requests are honoured by PAT
}

double HostPerf::ReadBytesPerSecond(MemoryType t, int load_bytes) const {
  if (load_bytes <= 0) load_bytes = memcpy_load_bytes > 0 ? memcpy_load_bytes : 8;
  if (t == MemoryType::kWriteBack) return wb_copy_gbps * 1e9;
  // WC reads where the machine's rate was measured: the CPU may keep several uncached WC loads in
  // flight (WC is weakly ordered, UC is not), so they beat UC reads (h100-host: 1.14 GB/s against
  // 80 MB/s, docs/hil/2026-11-23-h100-seed001).
  if (t == MemoryType::kWriteCombining && wc_read_gbps > 0) return wc_read_gbps * 1e9;
  // UC, UC- and WC reads are not cached and not prefetched: each load waits for DRAM, so the
  // rate is one load per latency (seed 000: memcpy behaved like a loop of 64-bit loads,
  // 80.55/83.62 MB/s). Unknown types are costed like UC, the slow side.
  return load_bytes / (uc_load_latency_ns * 1e-9);
}

double HostPerf::WriteBytesPerSecond(MemoryType t) const {
  switch (t) {
    case MemoryType::kWriteBack: return wb_copy_gbps * 1e9;
    case MemoryType::kWriteCombining: return wc_write_gbps * 1e9;  // stores combine in buffers
    default: return 8.0 / (uc_load_latency_ns * 1e-9);            // one 8-byte store per trip
  }
}

double HostPerf::MemcpyBytesPerSecond(int threads) const {
  // Measured points at 1, 2, 4, 8, 16 threads (FACTS.md); between them, linear in threads;
  // beyond the last one measured, flat (memory bandwidth is saturated).
  static constexpr int kThreads[] = {1, 2, 4, 8, 16};
  if (threads < 1) threads = 1;
  if (memcpy_threads_gbps.empty()) return wb_copy_gbps * 1e9;
  const size_t n = std::min<size_t>(memcpy_threads_gbps.size(), 5);
  if (threads >= kThreads[n - 1]) return memcpy_threads_gbps[n - 1] * 1e9;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (threads >= kThreads[i] && threads <= kThreads[i + 1]) {
      const double f = double(threads - kThreads[i]) / (kThreads[i + 1] - kThreads[i]);
      return (memcpy_threads_gbps[i] + f * (memcpy_threads_gbps[i + 1] - memcpy_threads_gbps[i])) *
             1e9;
    }
  }
  return memcpy_threads_gbps[0] * 1e9;
}

}  // namespace resmem::sim
