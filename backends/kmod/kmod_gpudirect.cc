#include "backends/kmod/kmod_gpudirect.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "backends/api/memory.h"
#include "backends/cuda/block_pattern.h"
#include "kmod/uapi/nv_p2p_standin_ioctl.h"
#include "kmod/uapi/resmem_edu_ioctl.h"
#include "kmod/uapi/resmem_edu_p2p_ioctl.h"

namespace resmem {
namespace {

constexpr uint64_t kGpuPage = NV_P2P_STANDIN_GPU_PAGE;
constexpr uint64_t kPiece = RESMEM_EDU_PIECE;  // what one DMA transfer's sample writes
constexpr uint8_t kPoison = 0xa5;
// A transfer in flight during cudaFree: 8 pieces, 1.6 s of edu's 100 ms commands; the free comes
// 0.5 s in, inside the third piece.
constexpr uint64_t kInFlightBytes = 8 * kPiece;
constexpr auto kFreeAfter = std::chrono::milliseconds(500);

std::string Hex8(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08" PRIx32, v);
  return b;
}
std::string Range(uint64_t va, uint64_t len) { return "[" + HexAddress(va) + ", +" + FormatSize(len) + ")"; }
std::string ErrnoText(int e) {
  const char* n = ErrnoName(e);
  return *n ? std::string(n) : "errno " + std::to_string(e);
}

// An open file, closed when it goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// The GPU driver's side of the two profiles the scenario files name (the simulator's are in
// mock/rdma/nv_p2p.cc with the rest of their figures, which the lane's GPU does not have).
struct ApiEra {
  const char* gpu;
  uint32_t table_version;  // what its get_pages hands out
  bool dma_map_pages;      // it has nvidia_p2p_dma_map_pages
};
constexpr ApiEra kEras[] = {
    {"h100", 0x00010002, true},           // nv-p2p.h of the open driver (NVIDIA_P2P_PAGE_TABLE_VERSION)
    {"kepler-guide", 0x00010001, false},  // the 2013 guide, 4.3; it has no DMA mapping call (1.1)
};

struct Allocation {
  int context = 0;
  uint64_t va = 0, length = 0, bar_offset = 0;
  P2pTokens tokens;
  uint8_t* map = nullptr;  // its BAR pages, as the provider's mmap gives them
  bool freed = false;
};

struct ExplicitPin {
  Fd fd;  // a driver file of its own: its cache holds this pin
  uint64_t va = 0, length = 0;
};

class KmodGpuDirect : public GpuDirect {
 public:
  explicit KmodGpuDirect(KmodGpuDirectOptions o) : o_(std::move(o)) {}
  ~KmodGpuDirect() override { Reset(); }

  std::string name() const override { return "kmod"; }
  Status Configure(const GpuDirectConfig& config) override;
  Result<uint64_t> AllocGpu(uint64_t length, int context) override;
  Status FreeGpu(uint64_t va, bool dma_in_flight) override;
  Result<P2pTokens> QueryTokens(uint64_t va) override;
  Result<P2pPageTable> Pin(const P2pTokens& tokens, uint64_t va, uint64_t length) override;
  Status Unpin(uint64_t id) override;
  Result<P2pDmaStats> Dma(uint64_t va, uint64_t length, uint64_t block, int rounds) override;
  std::vector<std::string> Events() const override { return events_; }

 private:
  // Closes every file (the driver unpins what they hold, the provider frees what the contexts
  // allocated) and gives the provider its table version back.
  void Reset();
  Status NeedConfigured() const {
    if (!configured_) return Status::InvalidArgument("the P2P path is not set up: add a p2p_setup step first");
    return Status::Ok();
  }
  Status Refuse(const std::string& what) const {
    return Status::Unavailable(what + "; run the scenario on --backend sim (the model), or give its file "
                               "not_applicable.kmod with this reason");
  }
  Result<int> Context(int index);
  Result<Fd> OpenEdu() const;
  // The kernel's lines since the last call, appended to the events; returned too.
  std::vector<std::string> DrainKernelLog();
  // An errno from a module's call: the errno, what was asked, and the kernel's lines about it.
  Status ModuleError(int err, const std::string& what);
  Allocation* Holding(uint64_t va, uint64_t length, bool live_only);
  int P2pWrite(int fd, const P2pTokens& t, uint64_t va, uint64_t length, uint64_t offset, const void* data,
               uint64_t data_len, uint32_t flags, resmem_edu_p2p_write* w) const;
  Status SetTableVersion(uint32_t version);
  // Configure's parts: what the lane cannot do (the era the config names, or a refusal); the edu
  // devices there are; the one with the config's DMA mask and IOMMU state (sets edu_path_,
  // edu_name_ and route_; needs gpu_); the setup line of the events.
  Result<const ApiEra*> CheckConfig(const GpuDirectConfig& c) const;
  Result<std::vector<std::string>> EduDevices() const;
  Result<resmem_edu_info> FindEdu(const std::vector<std::string>& devices, const GpuDirectConfig& c);
  void LogSetup(const resmem_edu_info& info);
  // Dma's parts: the driver file a transfer of [addr, addr+len) goes through (the cache's, or with
  // unpin never a file of the range's own, kept so its pin stays); what the device's piece left in
  // the BAR ("intact", "mismatch", "lost": not one byte landed, after waiting up to 2 s for the
  // IOMMU's fault line naming the page; "not checked" where the allocation is freed: bar null);
  // the transfer's line of the events.
  Result<int> TransferFile(uint64_t addr, uint64_t len);
  std::string JudgeLanded(const uint8_t* bar, uint64_t piece, uint64_t n, uint64_t fill, uint64_t bus_addr);
  void LogTransfer(const std::string& what, const resmem_edu_p2p_write& w, uint64_t at, const std::string& data);
  void Log(std::string line) { events_.push_back(std::move(line)); }
  // What the device was told to write to, next to the page's physical address.
  std::string BusKind(uint64_t bus, uint64_t phys) const {
    if (phys_addr_) return "the physical address, given as is (the guide's API)";
    return bus == phys ? "dma_map_pages: the physical address" : "dma_map_pages: an IOVA";
  }
  // The provider's live page tables now (INFO), or -1.
  long LiveTables() {
    auto it = contexts_.find(0);
    nv_p2p_standin_info i{};
    if (it == contexts_.end() || ioctl(it->second.get(), NV_P2P_STANDIN_IOC_INFO, &i) != 0) return -1;
    return i.live_tables;
  }

  KmodGpuDirectOptions o_;
  GpuDirectConfig config_;
  bool configured_ = false;
  bool phys_addr_ = false;  // the guide's API: the device gets physical addresses
  std::string edu_path_, edu_name_, route_;
  nv_p2p_standin_info gpu_{};
  std::map<int, Fd> contexts_;
  std::vector<Allocation> allocs_;
  Fd cache_;                        // the driver file of lazy and after-each transfers
  std::map<std::pair<uint64_t, uint64_t>, Fd> kept_;  // unpin never: a file per pinned range
  std::map<uint64_t, ExplicitPin> pins_;
  uint64_t next_pin_ = 1, transfers_ = 0;
  Fd kmsg_;
  std::string kmsg_error_;
  std::string saved_table_version_;  // the parameter's value before Configure changed it
  std::vector<std::string> events_;
};

void KmodGpuDirect::Reset() {
  pins_.clear();
  kept_.clear();
  cache_.Reset();
  for (auto& a : allocs_)
    if (a.map) munmap(a.map, a.length);
  allocs_.clear();
  contexts_.clear();
  if (!saved_table_version_.empty()) {
    if (FILE* f = std::fopen(o_.table_version_param.c_str(), "w")) {
      std::fputs(saved_table_version_.c_str(), f);
      std::fclose(f);
    }
    saved_table_version_.clear();
  }
  configured_ = false;
}

std::vector<std::string> KmodGpuDirect::DrainKernelLog() {
  std::vector<std::string> lines;
  if (!kmsg_.valid()) return lines;
  char rec[8192];
  for (;;) {
    const ssize_t n = read(kmsg_.get(), rec, sizeof rec - 1);
    if (n < 0 && errno == EPIPE) continue;  // records were overwritten: go on with the next
    if (n <= 0) break;
    const std::string line = KmsgRecordText(std::string(rec, static_cast<size_t>(n)));
    if (line.empty()) continue;
    lines.push_back(line);
    Log(line);
  }
  return lines;
}

Status KmodGpuDirect::ModuleError(int err, const std::string& what) {
  std::string said;
  for (const auto& l : DrainKernelLog()) said += (said.empty() ? "" : " | ") + l;
  std::string msg = what + ": " + ErrnoText(err) + " (" + std::strerror(err) + ")";
  if (!said.empty()) msg += "; the kernel said: " + said;
  else if (!kmsg_error_.empty()) msg += "; " + kmsg_error_;
  return Status::Errno(err, msg);
}

Result<Fd> KmodGpuDirect::OpenEdu() const {
  Fd fd(open(edu_path_.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    const int e = errno;
    return Status::Errno(e, "open " + edu_path_ + ": " + std::strerror(e) +
                                (e == EMFILE ? " (unpin = \"never\" keeps a file per pinned range open)" : ""));
  }
  return fd;
}

Result<int> KmodGpuDirect::Context(int index) {
  auto it = contexts_.find(index);
  if (it != contexts_.end()) return it->second.get();
  Fd fd(open(o_.provider.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) {
    const int e = errno;
    return Status::Errno(e, "open " + o_.provider + " (CUDA context " + std::to_string(index) + "): " +
                                std::strerror(e) + (e == EMFILE ? " (the stand-in has 255 VA spaces)" : ""));
  }
  const int raw = fd.get();
  contexts_[index] = std::move(fd);
  return raw;
}

Allocation* KmodGpuDirect::Holding(uint64_t va, uint64_t length, bool live_only) {
  // The newest first: a freed range's address may have been handed out again.
  for (auto it = allocs_.rbegin(); it != allocs_.rend(); ++it) {
    if (live_only && it->freed) continue;
    if (va >= it->va && length <= it->length && va - it->va <= it->length - length) return &*it;
  }
  return nullptr;
}

int KmodGpuDirect::P2pWrite(int fd, const P2pTokens& t, uint64_t va, uint64_t length, uint64_t offset,
                            const void* data, uint64_t data_len, uint32_t flags, resmem_edu_p2p_write* w) const {
  *w = resmem_edu_p2p_write{};
  w->p2p_token = t.p2p_token;
  w->va_space_token = t.va_space_token;
  w->va = va;
  w->length = length;
  w->offset = offset;
  w->data = reinterpret_cast<uintptr_t>(data);
  w->data_len = data_len;
  w->flags = flags | (phys_addr_ ? RESMEM_EDU_P2P_PHYS_ADDR : 0);
  return ioctl(fd, RESMEM_EDU_IOC_P2P_WRITE, w) ? errno : 0;
}

Status KmodGpuDirect::SetTableVersion(uint32_t version) {
  const std::string& p = o_.table_version_param;
  if (saved_table_version_.empty()) {
    FILE* f = std::fopen(p.c_str(), "r");
    char buf[32] = {0};
    if (!f || !std::fgets(buf, sizeof buf, f)) {
      const int e = errno;
      if (f) std::fclose(f);
      return Status::Errno(e ? e : EIO, "read " + p + ": " + std::strerror(e ? e : EIO) +
                                            " (nv_p2p_standin.ko's table_version= parameter; is it loaded?)");
    }
    std::fclose(f);
    saved_table_version_ = buf;
  }
  FILE* f = std::fopen(p.c_str(), "w");
  const std::string text = Hex8(version);
  const bool ok = f && std::fputs(text.c_str(), f) >= 0;
  const int e = errno;
  if (f && std::fclose(f) != 0) return Status::Errno(errno, "write " + text + " to " + p + ": " + std::strerror(errno));
  if (!ok) return Status::Errno(e, "write " + text + " to " + p + ": " + std::strerror(e) + " (needs root)");
  return Status::Ok();
}

Result<const ApiEra*> KmodGpuDirect::CheckConfig(const GpuDirectConfig& c) const {
  const ApiEra* era = nullptr;
  for (const auto& e : kEras)
    if (c.gpu == e.gpu) era = &e;
  if (!era) return Status::InvalidArgument("unknown GPU profile '" + c.gpu + "'; the kmod part knows h100 and kepler-guide");
  if (c.dma_mask_bits < 24 || c.dma_mask_bits > 64)
    return Status::InvalidArgument("dma_mask " + std::to_string(c.dma_mask_bits) + " is not a DMA mask width: give 24 to 64 bits");
  if (c.bar1_base)
    return Refuse("bar1_base: the GPU's BAR is where the guest's firmware put ivshmem-plain's BAR2, not chosen by a scenario");
  if (c.link_gbps) return Refuse("link_gbps: the device's rate here is edu's, measured, not chosen");
  if (c.path == PciePath::kCrossSocket)
    return Refuse("path cross-socket: the lane's guest has one CPU socket and one PCI root bus");
  if (!c.callback_waits_for_dma)
    return Refuse("callback_waits = false: resmem_edu.ko's free callback always waits for the DMA in flight (the guide's 3.3)");
  if (c.put_pages_after_callback)
    return Refuse("put_after_callback: resmem_edu.ko never calls nvidia_p2p_put_pages on a table its free callback saw revoked");
  if (c.built_against_version && c.built_against_version != kKmodBuiltAgainstVersion)
    return Refuse("built_against " + Hex8(c.built_against_version) + ": resmem_edu.ko is built against " +
                  Hex8(kKmodBuiltAgainstVersion) + " (kmod/nv_p2p_standin.h); give the GPU driver's table_version instead");
  return era;
}

Result<std::vector<std::string>> KmodGpuDirect::EduDevices() const {
  glob_t g{};
  std::vector<std::string> devices;
  if (glob(o_.edu_glob.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) devices.push_back(g.gl_pathv[i]);
  globfree(&g);
  if (devices.empty())
    return Status::Unavailable("no " + o_.edu_glob + " device: load resmem_edu.ko (dma_bits=64,32 gives a 64-bit and a "
                               "32-bit device; docs/rdma.md) or run the QEMU lane, ci/qemu/kmod_lane.sh");
  return devices;
}

Result<resmem_edu_info> KmodGpuDirect::FindEdu(const std::vector<std::string>& devices, const GpuDirectConfig& c) {
  std::string have;
  resmem_edu_info info{};
  edu_path_.clear();
  for (const auto& d : devices) {
    Fd fd(open(d.c_str(), O_RDWR | O_CLOEXEC));
    resmem_edu_info i{};
    if (!fd.valid() || ioctl(fd.get(), RESMEM_EDU_IOC_INFO, &i) != 0) {
      have += (have.empty() ? "" : ", ") + d + " (" + std::strerror(errno) + ")";
      continue;
    }
    have += (have.empty() ? "" : ", ") + d + " (" + std::to_string(i.dma_bits) + "-bit)";
    if (edu_path_.empty() && static_cast<int>(i.dma_bits) == c.dma_mask_bits) {
      edu_path_ = d;
      info = i;
    }
  }
  if (edu_path_.empty())
    return Status::Unavailable("no edu device with a " + std::to_string(c.dma_mask_bits) + "-bit DMA mask: have " + have +
                               "; load resmem_edu.ko with dma_bits= giving one");
  edu_name_ = info.name;
  const bool translated = info.flags & RESMEM_EDU_TRANSLATED;
  if (translated != c.iommu)
    return Status::Unavailable(std::string("the scenario wants the IOMMU ") + (c.iommu ? "on" : "off") + " and " +
                               edu_name_ + " (" + info.pci_name + ") is " +
                               (translated ? "behind a translating IOMMU" : "not translated by an IOMMU") +
                               ": run it in the lane's " + (c.iommu ? "IOMMU boot (q35, intel-iommu)" : "first boot (no IOMMU)"));
  auto real = [&](const std::string& name) {
    char buf[PATH_MAX];
    const std::string p = o_.pci_devices + "/" + name;
    return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
  };
  route_ = PcieRouteOf(real(info.pci_name), real(gpu_.pci_name));
  if (route_.empty()) route_ = "unknown";
  if (translated) route_ += " (IOMMU)";
  return info;
}

void KmodGpuDirect::LogSetup(const resmem_edu_info& info) {
  const bool translated = info.flags & RESMEM_EDU_TRANSLATED;
  char line[512];
  std::snprintf(line, sizeof line,
                "setup: GPU %s (ivshmem-plain BAR [mem 0x%" PRIx64 "-0x%" PRIx64 "], %s, %s of it for P2P pins), "
                "page tables %s; device %s (%s, %u-bit DMA mask), IOMMU %s, route %s; driver built against %s, "
                "unpin %s, %s",
                gpu_.pci_name, static_cast<uint64_t>(gpu_.bar_phys),
                static_cast<uint64_t>(gpu_.bar_phys + gpu_.bar_size - 1), FormatSize(gpu_.bar_size).c_str(),
                FormatSize(gpu_.p2p_window).c_str(), Hex8(gpu_.table_version).c_str(), edu_name_.c_str(),
                info.pci_name, info.dma_bits, translated ? "on" : "off", route_.c_str(),
                Hex8(kKmodBuiltAgainstVersion).c_str(), UnpinPolicyName(config_.unpin),
                phys_addr_ ? "the device given physical addresses (the guide's API)"
                           : "the device given nvidia_p2p_dma_map_pages' bus addresses");
  Log(line);
  if (!kmsg_error_.empty()) Log(kmsg_error_);
}

Status KmodGpuDirect::Configure(const GpuDirectConfig& c) {
  Reset();
  events_.clear();
  RESMEM_ASSIGN_OR_RETURN(const ApiEra* era, CheckConfig(c));
  // The CUDA side: the stand-in provider.
  if (access(o_.provider.c_str(), F_OK) != 0)
    return Status::Unavailable("no " + o_.provider + ": load nv_p2p_standin.ko (the lane's stand-in for NVIDIA's "
                               "nvidia_p2p_* API over QEMU's ivshmem-plain BAR; docs/rdma.md) or run the QEMU lane, "
                               "ci/qemu/kmod_lane.sh");
  // The device's driver: the edu device with the scenario's DMA mask.
  RESMEM_ASSIGN_OR_RETURN(const std::vector<std::string> devices, EduDevices());
  RESMEM_ASSIGN_OR_RETURN(int ctx0, Context(0));
  gpu_ = nv_p2p_standin_info{};
  if (ioctl(ctx0, NV_P2P_STANDIN_IOC_INFO, &gpu_) != 0) return ModuleError(errno, "NV_P2P_STANDIN_IOC_INFO on " + o_.provider);
  RESMEM_ASSIGN_OR_RETURN(const resmem_edu_info info, FindEdu(devices, c));

  const uint32_t version = c.table_version ? c.table_version : era->table_version;
  RESMEM_RETURN_IF_ERROR(SetTableVersion(version));
  if (ioctl(ctx0, NV_P2P_STANDIN_IOC_INFO, &gpu_) != 0) return ModuleError(errno, "NV_P2P_STANDIN_IOC_INFO on " + o_.provider);
  if (gpu_.table_version != version)
    return Status::Internal("the stand-in hands out tables of " + Hex8(gpu_.table_version) + " after " +
                            o_.table_version_param + " was set to " + Hex8(version));

  kmsg_ = Fd(open(o_.kmsg.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (kmsg_.valid()) {
    lseek(kmsg_.get(), 0, SEEK_END);  // only what this scenario makes the modules say
    kmsg_error_.clear();
  } else {
    kmsg_error_ = "the kernel's lines are not shown: open " + o_.kmsg + ": " + std::strerror(errno);
  }
  RESMEM_ASSIGN_OR_RETURN(cache_, OpenEdu());
  config_ = c;
  phys_addr_ = !era->dma_map_pages;
  configured_ = true;
  transfers_ = 0;
  next_pin_ = 1;
  LogSetup(info);
  return Status::Ok();
}

Result<uint64_t> KmodGpuDirect::AllocGpu(uint64_t length, int context) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  RESMEM_ASSIGN_OR_RETURN(int fd, Context(context));
  nv_p2p_standin_alloc a{};
  a.length = length;
  if (ioctl(fd, NV_P2P_STANDIN_IOC_ALLOC, &a) != 0)
    return ModuleError(errno, "cudaMalloc(" + FormatSize(length) + ") in context " + std::to_string(context) +
                                  " (NV_P2P_STANDIN_IOC_ALLOC)");
  Allocation rec;
  rec.context = context;
  rec.va = a.va;
  rec.length = (length + kGpuPage - 1) / kGpuPage * kGpuPage;
  rec.bar_offset = a.bar_offset;
  rec.tokens = {a.p2p_token, a.va_space_token};
  void* m = mmap(nullptr, rec.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(a.va));
  if (m == MAP_FAILED) {
    const int e = errno;
    nv_p2p_standin_free f{};
    f.va = a.va;
    ioctl(fd, NV_P2P_STANDIN_IOC_FREE, &f);
    return ModuleError(e, "mmap of the BAR pages of " + Range(a.va, rec.length));
  }
  rec.map = static_cast<uint8_t*>(m);
  allocs_.push_back(rec);
  DrainKernelLog();
  Log("cuda: cudaMalloc(" + FormatSize(length) + ") in context " + std::to_string(context) + " -> " + HexAddress(a.va) +
      ", " + DescribeTokens(rec.tokens) + ", BAR offset " + HexAddress(a.bar_offset));
  return a.va;
}

Result<P2pTokens> KmodGpuDirect::QueryTokens(uint64_t va) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  const Allocation* a = Holding(va, 1, true);
  if (!a)
    return Status::Errno(EINVAL, "no live allocation holds " + HexAddress(va) + " (cuPointerGetAttribute answers "
                                 "CUDA_ERROR_INVALID_VALUE for a freed pointer): allocate it with p2p_alloc");
  return a->tokens;
}

Result<P2pPageTable> KmodGpuDirect::Pin(const P2pTokens& tokens, uint64_t va, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  RESMEM_ASSIGN_OR_RETURN(Fd fd, OpenEdu());
  DrainKernelLog();
  resmem_edu_p2p_write w;
  const std::string what = "nvidia_p2p_get_pages of " + Range(va, length) + " with " + DescribeTokens(tokens) +
                           " (" + edu_name_ + " P2P_WRITE, pin only)";
  if (int e = P2pWrite(fd.get(), tokens, va, length, 0, nullptr, 0, 0, &w)) {
    resmem_edu_p2p_stats s{};
    Status st = ModuleError(e, what);
    // A table the driver refused after get_pages (its version) was put back.
    if (ioctl(fd.get(), RESMEM_EDU_IOC_P2P_STATS, &s) == 0 && s.unpins)
      Log("driver: put the refused page table back (nvidia_p2p_put_pages: " + std::to_string(s.unpins) + ")");
    return st;
  }
  P2pPageTable t;
  t.id = next_pin_++;
  t.version = w.table_version;
  t.page_size = w.page_size == 1 ? kGpuPage : w.page_size == 0 ? 4096 : 0;
  t.physical_addresses.push_back(w.phys_addr);
  const uint64_t bus0 = w.bus_addr;
  // Each page's physical address, as the table gives it (a hit of this file's cache each).
  for (uint32_t i = 1; i < w.entries && t.page_size; ++i) {
    resmem_edu_p2p_write p;
    if (int e = P2pWrite(fd.get(), tokens, va, length, i * t.page_size, nullptr, 0, 0, &p))
      return ModuleError(e, "reading entry " + std::to_string(i) + " of page table " + std::to_string(t.id));
    t.physical_addresses.push_back(p.phys_addr);
  }
  DrainKernelLog();
  Log("driver: " + what + " -> page table " + std::to_string(t.id) + ", version " + Hex8(w.table_version) + ", " +
      std::to_string(w.entries) + " entries of " + FormatSize(t.page_size) + ", pinned in " +
      std::to_string(w.pin_ns / 1000) + " us; page 0 at phys " + HexAddress(w.phys_addr) + ", bus " + HexAddress(bus0) + " (" +
      BusKind(bus0, w.phys_addr) + ")");
  ExplicitPin p;
  p.fd = std::move(fd);
  p.va = va;
  p.length = length;
  pins_[t.id] = std::move(p);
  return t;
}

Status KmodGpuDirect::Unpin(uint64_t id) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  auto it = pins_.find(id);
  if (it == pins_.end())
    return Status::InvalidArgument("the driver holds no page table " + std::to_string(id) + ": pin first");
  const int fd = it->second.fd.get();
  resmem_edu_p2p_stats before{}, after{};
  const long live = LiveTables();
  ioctl(fd, RESMEM_EDU_IOC_P2P_STATS, &before);
  const int n = ioctl(fd, RESMEM_EDU_IOC_P2P_FLUSH);
  if (n < 0) return ModuleError(errno, "P2P_FLUSH of page table " + std::to_string(id));
  ioctl(fd, RESMEM_EDU_IOC_P2P_STATS, &after);
  DrainKernelLog();
  const std::string counts = "(P2P_FLUSH unpinned " + std::to_string(n) + "; the driver's revocations " +
                             std::to_string(after.revoked) + ", put_pages " + std::to_string(before.unpins) + " -> " +
                             std::to_string(after.unpins) + "; the provider's live page tables " +
                             std::to_string(live) + " -> " + std::to_string(LiveTables()) + ")";
  // The driver's own count says whether it called put_pages (FLUSH also drops revoked pins).
  if (after.unpins > before.unpins)
    Log("driver: nvidia_p2p_put_pages of page table " + std::to_string(id) + " " + counts);
  else if (after.revoked)
    Log("driver: page table " + std::to_string(id) + " was revoked by the free callback: no nvidia_p2p_put_pages " + counts);
  else
    Log("driver: page table " + std::to_string(id) + " is not in the driver's cache " + counts);
  pins_.erase(it);
  return Status::Ok();
}

Status KmodGpuDirect::FreeGpu(uint64_t va, bool dma_in_flight) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  Allocation* a = nullptr;
  for (auto& x : allocs_)
    if (!x.freed && x.va == va) a = &x;
  if (!a) return Status::Errno(EINVAL, "cudaFree(" + HexAddress(va) + "): not the start of a live allocation");
  RESMEM_ASSIGN_OR_RETURN(int ctx, Context(a->context));
  DrainKernelLog();
  // The transfer in flight: into an explicit pin of the allocation (its file's cached pin), else
  // the whole allocation through the transfer file.
  int fd = cache_.get();
  uint64_t pin_va = a->va, pin_len = a->length;
  for (const auto& [id, p] : pins_)
    if (p.va >= a->va && p.va - a->va < a->length) {
      fd = p.fd.get();
      pin_va = p.va;
      pin_len = p.length;
      break;
    }
  std::vector<uint64_t> block(kInFlightBytes / 8);
  pattern::Fill(block.data(), kInFlightBytes, transfers_, pattern::Mix(o_.seed + transfers_));
  resmem_edu_p2p_write w{};
  int we = 0;
  const uint64_t in_flight = std::min(kInFlightBytes, pin_len);
  std::thread writer;
  if (dma_in_flight) {
    Log("device: writes " + FormatSize(in_flight) + " into " + Range(pin_va, pin_len) + " when cudaFree comes");
    writer = std::thread([&] { we = P2pWrite(fd, a->tokens, pin_va, pin_len, 0, block.data(), in_flight, 0, &w); });
    std::this_thread::sleep_for(kFreeAfter);
  }
  munmap(a->map, a->length);  // FREE takes the pages away from under the mapping
  a->map = nullptr;
  nv_p2p_standin_free f{};
  f.va = va;
  const auto t0 = std::chrono::steady_clock::now();
  const int fe = ioctl(ctx, NV_P2P_STANDIN_IOC_FREE, &f) ? errno : 0;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (writer.joinable()) writer.join();
  a->freed = fe == 0;
  if (fe) return ModuleError(fe, "cudaFree(" + HexAddress(va) + ") (NV_P2P_STANDIN_IOC_FREE)");
  DrainKernelLog();
  char line[256];
  std::snprintf(line, sizeof line,
                "cuda: cudaFree(0x%" PRIx64 ") returned 0 after %.0f ms: %u page table(s) revoked, %.0f ms in the "
                "drivers' free callbacks", va, ms, f.revoked, f.callback_ns / 1e6);
  Log(line);
  if (dma_in_flight)
    Log("device: the transfer in flight ended " + (we ? ErrnoText(we) : std::string("0")) + " after " +
        std::to_string(w.written) + " of " + std::to_string(in_flight) + " bytes (" + std::to_string(w.commands) +
        " DMA commands)");
  return Status::Ok();
}

Result<int> KmodGpuDirect::TransferFile(uint64_t addr, uint64_t len) {
  if (config_.unpin != UnpinPolicy::kNever) return cache_.get();
  auto kept = kept_.find({addr, len});
  if (kept == kept_.end()) {
    RESMEM_ASSIGN_OR_RETURN(Fd f, OpenEdu());
    kept = kept_.emplace(std::make_pair(addr, len), std::move(f)).first;
  }
  return kept->second.get();
}

std::string KmodGpuDirect::JudgeLanded(const uint8_t* bar, uint64_t piece, uint64_t n, uint64_t fill,
                                       uint64_t bus_addr) {
  if (!bar) return "not checked (the allocation is freed)";
  uint64_t landed = 0;
  for (uint64_t i = 0; i < piece; ++i) landed += bar[i] != kPoison;
  if (landed != 0) return pattern::CountMismatches(bar, piece, n, fill) ? "mismatch" : "intact";
  // An IOMMU's fault report comes asynchronously (its interrupt) and names the page ("fault
  // addr 0x..."): wait for a line with that address, 2 s at most.
  const std::string page = HexAddress(bus_addr & ~0xfffull);
  bool named = false;
  for (int i = 0; i < 20 && !named; ++i) {
    for (const auto& l : DrainKernelLog()) named |= l.find(page) != std::string::npos;
    if (!named) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "lost";
}

void KmodGpuDirect::LogTransfer(const std::string& what, const resmem_edu_p2p_write& w, uint64_t at,
                                const std::string& data) {
  char line[400];
  std::snprintf(line, sizeof line,
                "driver: %s: %s%s; the device's DMA of %" PRIu64 " bytes at +%" PRIu64 " (bus 0x%" PRIx64
                ", phys 0x%" PRIx64 ": %s) in %.0f ms: data %s",
                what.c_str(), w.hit ? "pin from the cache" : "get_pages + dma_map_pages",
                w.evicted ? (", after unpinning " + std::to_string(w.evicted) + " least recently used").c_str() : "",
                static_cast<uint64_t>(w.written), at, static_cast<uint64_t>(w.bus_addr),
                static_cast<uint64_t>(w.phys_addr), BusKind(w.bus_addr, w.phys_addr).c_str(), w.device_ns / 1e6,
                data.c_str());
  Log(line);
}

Result<P2pDmaStats> KmodGpuDirect::Dma(uint64_t va, uint64_t length, uint64_t block, int rounds) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  if (length == 0) return Status::InvalidArgument("a DMA of 0 bytes: give a length");
  if (block == 0) block = length;
  if (rounds < 1) return Status::InvalidArgument("rounds must be at least 1");
  DrainKernelLog();
  P2pDmaStats stats;
  stats.data = "intact";
  stats.route = route_;
  for (int r = 0; r < rounds; ++r) {
    for (uint64_t off = 0; off < length; off += block) {
      // n: the scenario's transfers so far (the seed's choice of sample); named by this step's count.
      const uint64_t addr = va + off, len = std::min(block, length - off), n = ++transfers_;
      const std::string what = "transfer " + std::to_string(stats.transfers + 1) + " to " + Range(addr, len);
      // The tokens of the allocation holding it; a freed one's are what a program still has.
      Allocation* a = Holding(addr, len, true);
      if (!a) a = Holding(addr, len, false);
      if (!a) return Status::Errno(EINVAL, what + ": no allocation, live or freed, holds it: allocate it with p2p_alloc");
      RESMEM_ASSIGN_OR_RETURN(const int fd, TransferFile(addr, len));
      const uint32_t flags = config_.unpin == UnpinPolicy::kAfterEach ? RESMEM_EDU_P2P_NO_CACHE : 0;
      // The sample the device writes: one piece, at a piece boundary the seed picks.
      const uint64_t piece = std::min(kPiece, len) / 8 * 8;
      if (piece == 0) return Status::InvalidArgument(what + ": a transfer under 8 bytes");
      const uint64_t at = len >= kPiece ? pattern::Mix(o_.seed ^ (n * 0x9e3779b97f4a7c15ull)) % (len / kPiece) * kPiece : 0;
      std::vector<uint64_t> bytes(piece / 8);
      const uint64_t fill = pattern::Mix(o_.seed + n);
      pattern::Fill(bytes.data(), piece, n, fill);
      uint8_t* bar = a->freed || !a->map ? nullptr : a->map + (addr - a->va) + at;
      if (bar) std::memset(bar, kPoison, piece);
      resmem_edu_p2p_write w;
      const int e = P2pWrite(fd, a->tokens, addr, len, at, bytes.data(), piece, flags, &w);
      if (e && e != ECANCELED) {
        if (config_.unpin == UnpinPolicy::kNever) kept_.erase({addr, len});
        return ModuleError(e, what + " (" + edu_name_ + " P2P_WRITE)");
      }
      stats.transfers++;
      stats.bytes += w.written;
      stats.seconds += w.device_ns / 1e9;
      (w.hit ? stats.hits : stats.pins)++;
      stats.evictions += w.evicted;
      const std::string data = JudgeLanded(bar, piece, n, fill, w.bus_addr);
      DrainKernelLog();
      LogTransfer(what, w, at, data);
      if (e == ECANCELED) return ModuleError(e, what + ": revoked during the transfer");
      if (data != "intact") stats.data = data;
    }
  }
  stats.note = "the device wrote one " + FormatSize(kPiece) + " piece of each transfer (edu under TCG: 100 ms a DMA "
               "command), read back through the BAR";
  if (route_.rfind("through-cpu", 0) == 0)
    stats.note += "; the route is the root complex, which the guide (2.2) says works, but yields worse performance";
  return stats;
}

}  // namespace

std::string KmsgRecordText(const std::string& record) {
  const size_t semi = record.find(';');
  const size_t comma = record.find(',');
  if (semi == std::string::npos || comma == std::string::npos || comma > semi) return "";
  // The kernel escapes unprintable bytes as \xNN; the text ends at the first newline.
  return record.substr(semi + 1, record.find('\n', semi) - semi - 1);
}

std::string PcieRouteOf(const std::string& a, const std::string& b) {
  auto parent = [](const std::string& p) { return p.substr(0, p.rfind('/')); };
  if (a.empty() || b.empty()) return "";
  // The deepest common ancestor in /sys/devices.
  std::string pa = parent(a), pb = parent(b);
  while (pa.size() > 1 && !(pb == pa || pb.rfind(pa + "/", 0) == 0)) pa = parent(pa);
  const std::string base = pa.substr(pa.rfind('/') + 1);
  if (base.rfind("pci", 0) == 0) return "through-cpu";     // a host bridge: the root complex
  if (base.find(':') != std::string::npos) return "same-switch";  // a PCI bridge or switch port
  return "";
}

std::unique_ptr<GpuDirect> MakeKmodGpuDirect(KmodGpuDirectOptions options) {
  return std::make_unique<KmodGpuDirect>(std::move(options));
}

}  // namespace resmem
