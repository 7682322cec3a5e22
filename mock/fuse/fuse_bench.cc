// Prints what the FUSE-emulated device costs: read and write bandwidth through a MAP_SHARED
// mapping against plain memory, with the writeback limits raised (as root) and left at the
// kernel's defaults, and the round-trip time of RESMEM_IOC_LENGTH. Medians of --passes passes,
// each pass timing plain memory and the mapping alternately (MeasureAgainstPlain).
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

#include "backends/api/median.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::fuse_emu {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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

// A mapping under test and plain memory, timed alternately within every pass: each timing of the
// mapping comes right after the same timing of plain memory, so load that changes during a run
// (a shared machine) moves both, and the ratio of each pass is what is kept. Every pass maps
// afresh, so every pass has a cold read: the first touch of a new mapping of a device whose bytes
// exist; `drop` (posix_fadvise DONTNEED of the FUSE file) first empties the daemon path's page
// cache, so that first touch asks the daemon again. plain.cold_read is a read of the plain
// buffer (already touched): the mapping's cold read is measured against memory at full speed.
struct Measured {
  Figures mapping, plain, ratio;  // medians of the passes (ratio: mapping / plain, per pass)
  int aligned_passes = 0;  // passes whose mapping the kernel placed 2 MiB aligned
};

// `misalign`: the mapping is placed 4 KiB past a 2 MiB boundary (what a program's mmap may get
// where other mappings leave no aligned hole), so no 2 MiB page can be mapped by one PMD.
Measured MeasureAgainstPlain(int fd, bool drop, uint64_t size, int passes, uint8_t* plain,
                             uint8_t* scratch, bool misalign = false) {
  std::vector<Figures> m, p;
  int aligned = 0;
  auto rate = [&](double t0) { return size / (Now() - t0) / 1e9; };
  for (int pass = 0; pass < passes; ++pass) {
    if (drop) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    void* at = nullptr;
    int fixed = 0;
    if (misalign) {
      const uint64_t huge = 2u << 20;
      void* hole = mmap(nullptr, size + 2 * huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (hole != MAP_FAILED) {
        munmap(hole, size + 2 * huge);
        at = reinterpret_cast<void*>(
            ((reinterpret_cast<uintptr_t>(hole) + huge - 1) & ~(huge - 1)) + 4096);
        fixed = MAP_FIXED_NOREPLACE;
      }
    }
    void* v = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd, 0);
    if (v == MAP_FAILED) {
      std::perror("fuse_bench: mmap");
      std::exit(4);
    }
    auto* mem = static_cast<uint8_t*>(v);
    // Where the kernel put it (the benchmark passes no address, as a program does): a 2 MiB page
    // of the device is mapped by one PMD only at a 2 MiB-aligned address, else piece by piece.
    if (reinterpret_cast<uintptr_t>(v) % (2u << 20) == 0) ++aligned;
    Figures fm, fp;
    double t0 = Now();
    std::memcpy(scratch, plain, size);
    fp.cold_read = rate(t0);
    t0 = Now();
    std::memcpy(scratch, mem, size);  // first touch: faults (and, on the daemon path, requests)
    fm.cold_read = rate(t0);
    t0 = Now();
    std::memcpy(scratch, plain, size);
    fp.warm_read = rate(t0);
    t0 = Now();
    std::memcpy(scratch, mem, size);
    fm.warm_read = rate(t0);
    std::memset(scratch, pass + 1, size);
    t0 = Now();
    std::memcpy(plain, scratch, size);
    fp.dirty = rate(t0);
    t0 = Now();
    std::memcpy(mem, scratch, size);  // dirtying only: what balance_dirty_pages throttles
    fm.dirty = rate(t0);
    msync(mem, size, MS_SYNC);
    std::memset(scratch, pass + 2, size);
    t0 = Now();
    std::memcpy(plain, scratch, size);
    fp.write = rate(t0);
    t0 = Now();
    std::memcpy(mem, scratch, size);
    msync(mem, size, MS_SYNC);  // the bytes reach the device inside the timing
    fm.write = rate(t0);
    munmap(mem, size);
    m.push_back(fm);
    p.push_back(fp);
  }
  auto median = [&](const std::vector<Figures>& v, double Figures::*field) {
    std::vector<double> x;
    for (const auto& f : v) x.push_back(f.*field);
    return MedianUpper(x);
  };
  auto median_ratio = [&](double Figures::*field) {
    std::vector<double> x;
    for (size_t i = 0; i < m.size(); ++i) x.push_back(m[i].*field / p[i].*field);
    return MedianUpper(x);
  };
  Measured out;
  out.aligned_passes = aligned;
  for (auto field : {&Figures::cold_read, &Figures::warm_read, &Figures::dirty, &Figures::write}) {
    out.mapping.*field = median(m, field);
    out.plain.*field = median(p, field);
    out.ratio.*field = median_ratio(field);
  }
  return out;
}

// One row: the mapping's figures, each as a percentage of plain memory in the same passes, and
// plain memory's own figures in those passes.
void PrintRow(const char* label, const Measured& r, const std::string& note) {
  std::printf("%-30s cold read %6.2f  warm read %6.2f  write %6.2f  write+msync %6.2f"
              "  = %3.0f%% %3.0f%% %3.0f%% %3.0f%% of plain (%.2f %.2f %.2f %.2f)"
              "  mapped 2 MiB aligned in %d passes%s\n",
              label, r.mapping.cold_read, r.mapping.warm_read, r.mapping.dirty, r.mapping.write,
              100 * r.ratio.cold_read, 100 * r.ratio.warm_read, 100 * r.ratio.dirty,
              100 * r.ratio.write, r.plain.cold_read, r.plain.warm_read, r.plain.dirty,
              r.plain.write, r.aligned_passes, note.empty() ? "" : ("  (" + note + ")").c_str());
}

// One row of the table: the device's pages, whether the mount passes the mapping through to
// them, whether it raises the writeback limits, and whether the mapping is placed off 2 MiB.
struct Config {
  bool passthrough, raise;
  DevicePages pages;
  const char* label;
  bool misalign = false;
};

// What one configuration's rows measure with: the size, the passes and the buffers.
struct Run {
  uint64_t size = 0;
  int passes = 0, ioctls = 0;
  const Buffer* plain = nullptr;
  const Buffer* scratch = nullptr;
};

// Fills the device (the reserved RAM holds data before a program maps it: a cold read measures
// the first touch of existing pages, not their allocation); with passthrough, prints the floor
// for any mapping of a file, the device's own file mapped directly, no FUSE (its first touch
// pays the faults a passthrough mapping pays). False, said on stderr, when it cannot.
bool FillDevice(RegionProvider& provider, const Config& config, const Run& run) {
  auto handle = provider.Open(OpenRequest{});
  MapRequest whole;
  whole.length = run.size;
  auto mem = handle.ok() ? handle.value()->Map(whole) : Result<std::unique_ptr<HostMemory>>(handle.status());
  if (!mem.ok() || !mem.value()->data()) {
    std::fprintf(stderr, "fuse_bench: cannot fill the device: %s\n",
                 mem.ok() ? "not addressable" : mem.status().ToString().c_str());
    return false;
  }
  std::memset(mem.value()->data(), 0x5a, run.size);
  auto span = mem.value()->file_span();
  if (config.passthrough && span) {
    std::printf("%-30s %s\n", "device's file:", span->backing.c_str());
    PrintRow("same file mapped, no FUSE",
             MeasureAgainstPlain(span->fd, false, run.size, run.passes, run.plain->data, run.scratch->data,
                                 config.misalign),
             "");
  }
  return true;
}

// What the daemon says about the path taken: the passthrough line and the device's open files.
void PrintDaemonLines(FuseDevice& dev) {
  auto status = dev.ControlStatus();
  if (!status.ok()) return;
  std::istringstream lines(*status);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("passthrough:", 0) == 0 || line.rfind("io ", 0) == 0 || line.rfind("backing ", 0) == 0 ||
        line.rfind("counters ", 0) == 0) {
      std::printf("%-30s %s\n", "", line.c_str());
    }
  }
}

// The ioctl round trip through the daemon: the median of 5 passes of `ioctls` calls.
void PrintIoctlRoundTrip(int fd, int ioctls) {
  std::vector<double> us;
  for (int pass = 0; pass < 5; ++pass) {
    __u64 len = 0;
    double t0 = Now();
    for (int i = 0; i < ioctls; ++i) ioctl(fd, RESMEM_IOC_LENGTH, &len);
    us.push_back((Now() - t0) / ioctls * 1e6);
  }
  std::printf("%-30s %.2f us per call (median of 5 x %d)\n", "ioctl RESMEM_IOC_LENGTH", MedianUpper(us), ioctls);
}

// One configuration's rows; the exit code (0, or 3/4 on a mount or device failure).
int RunConfig(const Config& config, const Run& run) {
  MemoryDeviceSpec spec;
  spec.size = run.size;
  spec.pages = config.pages;
  auto provider = MakeMemoryRegionProvider({spec});
  if (!provider.ok()) {
    std::fprintf(stderr, "fuse_bench: %s\n", provider.status().ToString().c_str());
    return 4;
  }
  if (!FillDevice(*provider.value(), config, run)) return 4;
  MountOptions opts;
  opts.raise_writeback_limits = config.raise;
  opts.passthrough = config.passthrough;
  auto dev = FuseDevice::Mount(*provider.value(), opts);
  if (!dev.ok()) {
    std::fprintf(stderr, "fuse_bench: %s\n", dev.status().ToString().c_str());
    return 3;
  }
  int fd = open(dev.value()->DevicePath("resmem0").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::perror("fuse_bench: open of the emulated device");
    return 4;
  }
  PrintRow(config.label,
           MeasureAgainstPlain(fd, !config.passthrough, run.size, run.passes, run.plain->data, run.scratch->data,
                               config.misalign),
           dev.value()->writeback_note());
  PrintDaemonLines(*dev.value());
  if (config.raise && !config.passthrough) PrintIoctlRoundTrip(fd, run.ioctls);
  close(fd);
  return 0;
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
  // Plain memory: an anonymous buffer, timed in the same passes as each mapping.
  Buffer plain(size);
  // The device's pages: 2 MiB where the process may mount a private huge tmpfs (root), else a
  // memfd (the backing line says which), and the 4 KiB memfd the passthrough row had before.
  // The passthrough row once more with its mapping placed off a 2 MiB boundary.
  const Config configs[] = {
      {true, true, DevicePages::kHugeWherePossible, "FUSE mapping, passthrough"},
      {true, true, DevicePages::kHugeWherePossible, "passthrough, not 2 MiB aligned", true},
      {true, true, DevicePages::kMemfd, "passthrough, 4 KiB memfd"},
      {false, true, DevicePages::kHugeWherePossible, "FUSE daemon path, raised"},
      {false, false, DevicePages::kHugeWherePossible, "FUSE daemon path, default"},
  };
  const Run run{size, passes, ioctls, &plain, &scratch};
  for (const Config& config : configs)
    if (const int rc = RunConfig(config, run); rc != 0) return rc;
  return 0;
}

}  // namespace
}  // namespace resmem::fuse_emu

int main(int argc, char** argv) { return resmem::fuse_emu::Main(argc, argv); }
