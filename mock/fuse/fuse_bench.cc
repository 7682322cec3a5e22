// Prints what the FUSE-emulated device costs: read and write bandwidth through a MAP_SHARED
// mapping against plain memory, with the writeback limits raised (as root) and left at the
// kernel's defaults, and the round-trip time of RESMEM_IOC_LENGTH. Medians of --passes passes.
// Figures are printed, never asserted (docs/fuse.md records them).
//
//   bazel run //mock/fuse:fuse_bench -- [--size-mib 256] [--passes 5] [--ioctls 20000]
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::fuse_emu {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A buffer of this process that the forked FUSE daemon does not inherit (MADV_DONTFORK): were it
// inherited, every page would be copy-on-write shared with the daemon, and the first pass writing
// into it after a mount would pay a page copy per 4 KiB (the first runs of this benchmark did:
// their cold reads were mostly that).
struct Buffer {
  explicit Buffer(uint64_t n) : size(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("fuse_bench: mmap of a buffer");
      std::exit(4);
    }
    madvise(p, n, MADV_DONTFORK);
    data = static_cast<uint8_t*>(p);
    std::memset(data, 0, n);
  }
  ~Buffer() { munmap(data, size); }
  uint8_t* data = nullptr;
  uint64_t size = 0;
};

struct Figures {
  double cold_read = 0, warm_read = 0, dirty = 0, write = 0;  // GB/s
};

// Times passes over `mem` (a mapping of `size` bytes); `sync` flushes writes (msync for files).
Figures Measure(uint8_t* mem, uint64_t size, int passes, bool is_file, uint8_t* scratch) {
  Figures f;
  double t0 = Now();
  std::memcpy(scratch, mem, size);  // first touch: pages come from the daemon (or fault in)
  f.cold_read = size / (Now() - t0) / 1e9;
  std::vector<double> reads, dirties, writes;
  for (int p = 0; p < passes; ++p) {
    t0 = Now();
    std::memcpy(scratch, mem, size);
    reads.push_back(size / (Now() - t0) / 1e9);
    std::memset(scratch, p + 1, size);
    t0 = Now();
    std::memcpy(mem, scratch, size);  // dirtying only: what balance_dirty_pages throttles
    dirties.push_back(size / (Now() - t0) / 1e9);
    if (is_file) msync(mem, size, MS_SYNC);
    std::memset(scratch, p + 2, size);
    t0 = Now();
    std::memcpy(mem, scratch, size);
    if (is_file) msync(mem, size, MS_SYNC);  // the bytes reach the daemon inside the timing
    writes.push_back(size / (Now() - t0) / 1e9);
  }
  f.warm_read = Median(reads);
  f.dirty = Median(dirties);
  f.write = Median(writes);
  return f;
}

// One row: the figures, and for a row other than plain memory each as a percentage of it.
void PrintRow(const char* label, const Figures& f, const Figures* plain, const std::string& note) {
  std::printf("%-30s cold read %6.2f  warm read %6.2f  write %6.2f  write+msync %6.2f", label,
              f.cold_read, f.warm_read, f.dirty, f.write);
  if (plain) {
    std::printf("  = %3.0f%% %3.0f%% %3.0f%% %3.0f%% of plain", 100 * f.cold_read / plain->cold_read,
                100 * f.warm_read / plain->warm_read, 100 * f.dirty / plain->dirty,
                100 * f.write / plain->write);
  }
  std::printf("%s\n", note.empty() ? "" : ("  (" + note + ")").c_str());
}

int Main(int argc, char** argv) {
  uint64_t size_mib = 256;
  int passes = 5, ioctls = 20000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size-mib" && i + 1 < argc) size_mib = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--passes" && i + 1 < argc) passes = std::atoi(argv[++i]);
    else if (a == "--ioctls" && i + 1 < argc) ioctls = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: fuse_bench [--size-mib N] [--passes N] [--ioctls N]\n");
      return 2;
    }
  }
  if (size_mib == 0 || passes <= 0 || ioctls <= 0) {
    std::fprintf(stderr, "fuse_bench: sizes and counts must be positive\n");
    return 2;
  }
  const uint64_t size = size_mib << 20;
  Buffer scratch(size);
  std::printf("fuse_bench: %llu MiB, %d passes (medians), GB/s = 1e9 B/s\n",
              static_cast<unsigned long long>(size_mib), passes);

  // Plain memory: the same copies between two anonymous buffers.
  Buffer plain(size);
  Figures base = Measure(plain.data, size, passes, false, scratch.data);
  PrintRow("plain memory", base, nullptr, "");

  struct Config {
    bool passthrough, raise;
    const char* label;
  };
  const Config configs[] = {
      {true, true, "FUSE mapping, passthrough"},
      {false, true, "FUSE daemon path, raised"},
      {false, false, "FUSE daemon path, default"},
  };
  for (const Config& config : configs) {
    const bool raise = config.raise;
    MemoryDeviceSpec spec;
    spec.size = size;
    auto provider = MakeMemoryRegionProvider({spec});
    if (!provider.ok()) {
      std::fprintf(stderr, "fuse_bench: %s\n", provider.status().ToString().c_str());
      return 4;
    }
    // The reserved RAM holds data before a program maps it (the producer wrote it): fill the
    // device, so a cold read measures the first touch of existing pages, not their allocation.
    {
      auto handle = provider.value()->Open(OpenRequest{});
      MapRequest whole;
      whole.length = size;
      auto mem = handle.ok() ? handle.value()->Map(whole) : Result<std::unique_ptr<HostMemory>>(handle.status());
      if (!mem.ok() || !mem.value()->data()) {
        std::fprintf(stderr, "fuse_bench: cannot fill the device: %s\n",
                     mem.ok() ? "not addressable" : mem.status().ToString().c_str());
        return 4;
      }
      std::memset(mem.value()->data(), 0x5a, size);
      // The floor for any mapping of a file: the device's own memfd mapped directly, no FUSE.
      // Its first touch pays the same page faults (fault-around maps 16 pages per fault) that a
      // passthrough mapping pays.
      auto span = mem.value()->file_span();
      if (config.passthrough && span) {
        void* direct = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, span->fd, 0);
        if (direct != MAP_FAILED) {
          Figures f = Measure(static_cast<uint8_t*>(direct), size, passes, true, scratch.data);
          PrintRow("same memfd mapped, no FUSE", f, &base, "");
          munmap(direct, size);
        }
      }
    }
    MountOptions opts;
    opts.raise_writeback_limits = raise;
    opts.passthrough = config.passthrough;
    auto dev = FuseDevice::Mount(*provider.value(), opts);
    if (!dev.ok()) {
      std::fprintf(stderr, "fuse_bench: %s\n", dev.status().ToString().c_str());
      return 3;
    }
    int fd = open(dev.value()->DevicePath("resmem0").c_str(), O_RDWR | O_CLOEXEC);
    void* p = fd < 0 ? MAP_FAILED : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      std::perror("fuse_bench: open/mmap of the emulated device");
      return 4;
    }
    Figures f = Measure(static_cast<uint8_t*>(p), size, passes, true, scratch.data);
    PrintRow(config.label, f, &base, dev.value()->writeback_note());
    // What the daemon says about the path taken: the passthrough line and the device's open files.
    if (auto status = dev.value()->ControlStatus(); status.ok()) {
      std::istringstream lines(*status);
      for (std::string line; std::getline(lines, line);) {
        if (line.rfind("passthrough:", 0) == 0 || line.rfind("io ", 0) == 0) {
          std::printf("%-30s %s\n", "", line.c_str());
        }
      }
    }
    if (raise && !config.passthrough) {
      std::vector<double> us;
      for (int pass = 0; pass < 5; ++pass) {
        __u64 len = 0;
        double t0 = Now();
        for (int i = 0; i < ioctls; ++i) ioctl(fd, RESMEM_IOC_LENGTH, &len);
        us.push_back((Now() - t0) / ioctls * 1e6);
      }
      std::printf("%-30s %.2f us per call (median of 5 x %d)\n", "ioctl RESMEM_IOC_LENGTH",
                  Median(us), ioctls);
    }
    munmap(p, size);
    close(fd);
  }
  return 0;
}

}  // namespace
}  // namespace resmem::fuse_emu

int main(int argc, char** argv) { return resmem::fuse_emu::Main(argc, argv); }
