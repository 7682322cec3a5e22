// The test and benchmark program that runs inside the QEMU guest of the kmod lane
// (ci/qemu/kmod_lane.sh, ci/qemu/guest_init.sh). Statically linked: the guest has only busybox.
//
//   resmem_guest CASE [ARGS...]      runs one case; exit 0 = pass, 1 = fail, 2 = usage.
// Lines starting with "# " are diagnostics that the lane keeps with the case in the JUnit report;
// /init prints the TAP "ok N - CASE" line from the exit status.
//
// Cases (the letters): a-* mapping facts + CUDA model, b-* fault-injection reproductions,
// c-*/load-* load-time refusals (expect-refused), d-* bad input, e-* data integrity, bench.
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/api/region.h"
#include "backends/fault/fault_injector.h"
#include "backends/fault/rng.h"
#include "backends/kmod/kmod_region.h"
#include "backends/kmod/smaps.h"
#include "backends/platform/proc_parsers.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/gpu/sim_gpu.h"

#include "kmod/tests/tap_diag.h"

namespace resmem {
namespace {

// Every random choice in the lane draws from this seed (printed by each case that draws).
constexpr uint64_t kSeed = 0x6b6d6f64ull;  // "kmod"

using guest::Diag;
using guest::ErrName;
using guest::Fail;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

std::string KernelLog() {
  int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (len <= 0) len = 1 << 20;
  std::string buf(static_cast<size_t>(len), '\0');
  int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, &buf[0], len);
  buf.resize(n > 0 ? n : 0);
  return buf;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

// Kernel log lines written after `mark` (the log's length when the case began).
std::vector<std::string> NewLogLines(size_t mark) {
  std::string log = KernelLog();
  return Lines(mark < log.size() ? log.substr(mark) : "");
}

// Signs of a kernel in trouble. "Bad pagetable" is expected only in the seed-002 case.
bool NoOops(const std::vector<std::string>& lines, std::string* bad) {
  static const char* kSigns[] = {"Oops", "BUG:", "WARNING:", "general protection", "Bad pagetable",
                                 "Call Trace", "Corrupted page table"};
  for (const auto& l : lines)
    for (const char* s : kSigns)
      if (l.find(s) != std::string::npos) {
        *bad = l;
        return false;
      }
  return true;
}

struct Device {
  std::unique_ptr<RegionHandle> handle;
  RegionInfo info;
};

Result<Device> OpenDevice(const std::string& path) {
  auto provider = MakeKmodRegionProvider();
  OpenRequest req;
  req.path = path;
  RESMEM_ASSIGN_OR_RETURN(auto handle, provider->Open(req));
  RESMEM_ASSIGN_OR_RETURN(RegionInfo info, handle->Info());
  return Device{std::move(handle), info};
}

std::unique_ptr<Gpu> SimGpu(const std::string& profile_name) {
  auto profile = sim::CudaProfileByName(profile_name);
  if (!profile.ok()) return nullptr;
  return sim::MakeSimGpu(profile.value(), profile->default_host, std::make_shared<VirtualClock>(),
                         std::make_shared<FaultInjector>(kSeed));
}

// ---- a: mapping facts from the real kernel, judged by the CUDA model ----------------------------

int CaseFacts(const std::string& path, bool expect_pfnmap) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  Diag("info: %s", dev->info.Describe().c_str());
  MapRequest req;
  req.length = 16 << 20;
  auto mem = dev->handle->Map(req);
  if (!mem.ok()) return Fail(mem.status().ToString());
  const MappingFacts& f = mem.value()->facts();
  auto vma = ReadSmapsVma(mem.value()->address());
  if (vma.ok()) {
    std::string flags;
    for (const auto& x : vma->vm_flags) flags += x + " ";
    Diag("smaps %s VmFlags: %s", vma->path.c_str(), flags.c_str());
  }
  Diag("facts: %s", f.Describe().c_str());
  // Pages mode's VMA is VM_MIXEDMAP where its pages go in as devmap entries (kernels with pfn_t,
  // up to 6.16), a plain shared file VMA where they go in as refcounted folios (kmod/resmem.c
  // RESMEM_PAGES_VM_FLAGS); the lane passes which from the build's probes.
  const char* mixedmap_env = getenv("resmem_pages_vm_mixedmap");
  bool expect_mixedmap = !expect_pfnmap && (!mixedmap_env || std::string(mixedmap_env) != "0");
  if (!expect_pfnmap)
    Diag("pages mode on this kernel: %s",
         expect_mixedmap ? "mm (devmap entries)" : "no mm (folio entries)");
  if (f.vm_pfnmap != expect_pfnmap || f.vm_io != expect_pfnmap || f.vm_mixedmap != expect_mixedmap)
    return Fail(std::string("VmFlags do not match mode ") + MapModeName(dev->info.mode));
  if ((dev->info.mode == MapMode::kPfnmap) != expect_pfnmap) return Fail("device is in the other mode");
  if (!f.phys_addr || *f.phys_addr != dev->info.phys_addr) return Fail("phys_addr not from info ioctl");

  int failures = 0;
  for (const char* prof : {"cuda-13.0-r580", "cuda-4.1-r285"}) {
    auto gpu = SimGpu(prof);
    if (!gpu) return Fail(std::string("no CUDA profile ") + prof);
    Status plain = gpu->Register(*mem.value(), 0, req.length, kRegisterDefault);
    Diag("%s cudaHostRegister(default) -> %s %s", prof,
         plain.ok() ? "0 cudaSuccess" : std::to_string(plain.code()).c_str(),
         plain.ok() ? "" : CudaErrorName(prof, plain.code()).c_str());
    if (expect_pfnmap == plain.ok()) {
      Diag("  expected %s", expect_pfnmap ? "a refusal (no struct pages)" : "success");
      ++failures;
    }
    if (plain.ok()) gpu->Unregister(*mem.value(), 0);
    if (expect_pfnmap && std::string(prof) == "cuda-13.0-r580") {
      Status io = gpu->Register(*mem.value(), 0, req.length, kRegisterIoMemory);
      Diag("%s cudaHostRegister(IoMemory) -> %s", prof, io.ok() ? "0 cudaSuccess" : io.ToString().c_str());
      if (!io.ok()) ++failures;
    }
  }
  return failures ? Fail("CUDA model decisions differ from the expectation") : 0;
}

// Real long-term pin through the test build's RESMEM_IOC_TEST_PIN (pin_user_pages_fast with
// FOLL_LONGTERM, the CUDA driver's default registration path).
int CasePin(const std::string& path, bool expect_pinned) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  MapRequest req;
  req.offset = 2 << 20;
  req.length = 4 << 20;
  auto mem = dev->handle->Map(req);
  if (!mem.ok()) return Fail(mem.status().ToString());
  uint8_t* p = mem.value()->data();
  std::memset(p, 0x11, 64 * 4096);
  resmem_test_pin pin{};
  pin.addr = mem.value()->address();
  pin.length = 64 * 4096;
  Status st = dev->handle->Ioctl(RESMEM_IOC_TEST_PIN, &pin);
  Diag("%s (%s) pin_user_pages_fast(FOLL_LONGTERM, 64 pages) -> %s, pinned %" PRIu64
       ", first phys 0x%" PRIx64,
       path.c_str(), MapModeName(dev->info.mode), st.ok() ? "ok" : st.ToString().c_str(),
       static_cast<uint64_t>(pin.pinned), static_cast<uint64_t>(pin.first_phys));
  if (expect_pinned) {
    if (!st.ok()) return Fail("long-term pin refused in pages mode");
    if (pin.pinned != 64) return Fail("not every page pinned");
    if (pin.first_phys != dev->info.phys_addr + req.offset)
      return Fail("the pinned page is not the device's physical page at the mapped offset");
    return 0;
  }
  if (st.ok()) return Fail("pfnmap mapping was pinned: it has no struct pages");
  if (st.code() != EFAULT) return Fail("expected EFAULT (mm/gup.c check_vma_flags refuses VM_IO|VM_PFNMAP)");
  return 0;
}

// The PAT memory type each device's range holds, from debugfs.
int CaseCacheTypes(const std::vector<std::string>& paths) {
  std::string pat = ReadFile("/sys/kernel/debug/x86/pat_memtype_list");
  if (pat.empty()) return Fail("cannot read /sys/kernel/debug/x86/pat_memtype_list (debugfs mounted?)");
  int failures = 0;
  for (const auto& path : paths) {
    auto dev = OpenDevice(path);
    if (!dev.ok()) return Fail(dev.status().ToString());
    char start[32];
    std::snprintf(start, sizeof(start), "[mem 0x%016" PRIx64 "-", dev->info.phys_addr);
    const char* want = dev->info.cache == CacheType::kWriteCombining ? "write-combining"
                       : dev->info.cache == CacheType::kUncached      ? "uncached"
                                                                      : "write-back";
    bool found = false;
    for (const auto& l : Lines(pat)) {
      if (l.find(start) == std::string::npos) continue;
      Diag("%s cache=%s: %s", path.c_str(), CacheTypeName(dev->info.cache), l.c_str());
      if (l.find(want) != std::string::npos && (dev->info.cache != CacheType::kUncached ||
                                                l.find("uncached-minus") == std::string::npos))
        found = true;
    }
    if (!found) {
      Diag("%s: no PAT entry of type %s at 0x%s", path.c_str(), want, start);
      ++failures;
    }
  }
  return failures ? Fail("PAT types differ from the devices' cache=") : 0;
}

// ---- b: fault-injection reproductions (test build) ----------------------------------------------

// Maps the device in a child that writes the first byte; returns the child's wait status.
int TouchInChild(const std::string& path, int* status) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path.c_str(), O_RDWR | O_SYNC);  // O_SYNC as the seed-002 program did
    if (fd < 0) _exit(10);
    void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096);
    if (p == MAP_FAILED) _exit(11);
    static_cast<volatile char*>(p)[0] = 'a';
    _exit(0);
  }
  if (pid < 0) return -1;
  waitpid(pid, status, 0);
  return 0;
}

int SetFault(int mode) {
  return WriteFile("/sys/module/resmem_test/parameters/fault", std::to_string(mode)) ? 0 : -1;
}

int CaseFaultSigbus(const std::string& path) {
  size_t mark = KernelLog().size();
  if (SetFault(2) != 0) return Fail("cannot set fault=2 (is resmem_test.ko loaded?)");
  int status = 0;
  TouchInChild(path, &status);
  SetFault(0);
  for (const auto& l : NewLogLines(mark)) Diag("console: %s", l.c_str());
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
    return Fail("expected the writer to die of SIGBUS, wait status " + std::to_string(status));
  Diag("writer killed by SIGBUS from the failing fault handler");
  return 0;
}

// Where the seed-002 bug's PTE points. The driver hands remap_pfn_range the kernel virtual address
// (plus the file's page offset) as the PFN; pfn_pte() shifts it by PAGE_SHIFT and keeps the bits of
// PTE_PFN_MASK (12..51 on x86-64: arch/x86/include/asm/pgtable_types.h), so the frame the PTE names
// is bits 0..39 of the KVA. What happens on the first write depends on where that lands:
//   above MAXPHYADDR (/proc/cpuinfo "address sizes"): the PTE has reserved bits set, the CPU raises
//     a reserved-bit page fault, the kernel prints "Corrupted page table" and "Bad pagetable" and
//     kills the writer (arch/x86/mm/fault.c pgtable_bad); the Debian kernel's randomized vmalloc
//     base lands here;
//   below it with no RAM there: the write goes to nothing and the writer lives on (seed 002's
//     silent form: the data is simply not where the driver thinks); KASAN turns off the memory
//     KASLR (arch/x86/mm/kaslr.c kaslr_memory_enabled), so the debug kernel's fixed vmalloc base
//     lands here;
//   inside System RAM: the write would corrupt the guest's own memory; the case does not write.
struct BadPte {
  uint64_t phys = 0;
  unsigned maxphys_bits = 0;
  bool reserved_bits = false;
  bool system_ram = false;
};

// MAXPHYADDR from /proc/cpuinfo (0 when it does not say).
unsigned MaxPhysBits() {
  auto bits = ParsePhysAddressBits(ReadFile("/proc/cpuinfo"));
  return bits.ok() && *bits > 0 ? static_cast<unsigned>(*bits) : 0;
}

// Whether a top-level "System RAM" entry of /proc/iomem holds phys.
bool InSystemRam(uint64_t phys) {
  auto iomem = ParseIomem(ReadFile("/proc/iomem"));
  if (!iomem.ok()) return false;
  for (const auto& e : *iomem)
    if (e.depth == 0 && e.name == "System RAM" && phys >= e.start && phys < e.end) return true;
  return false;
}

int CaseCorruptedPageTable(const std::string& path) {
  size_t mark = KernelLog().size();
  const off_t kOffset = 4096;  // the mapping's file offset: pgoff 1
  int dev = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (dev < 0) return Fail("cannot open " + path);
  char before = 'z';
  if (pwrite(dev, &before, 1, kOffset) != 1) return Fail("cannot write the marker byte through write()");
  if (SetFault(1) != 0) return Fail("cannot set fault=1 (is resmem_test.ko loaded?)");
  int mapped[2], go[2];
  if (pipe(mapped) != 0 || pipe(go) != 0) return Fail("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    char verdict = 0, ok = 'm';
    int fd = open(path.c_str(), O_RDWR | O_SYNC);  // O_SYNC as the seed-002 program did
    void* p = fd < 0 ? MAP_FAILED : mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kOffset);
    if (p == MAP_FAILED) ok = 'f';
    if (write(mapped[1], &ok, 1) != 1 || ok != 'm') _exit(11);
    if (read(go[0], &verdict, 1) != 1 || verdict != 'w') _exit(12);
    static_cast<volatile char*>(p)[0] = 'a';
    _exit(0);
  }
  if (pid < 0) return Fail("fork failed");
  char ok = 0;
  bool child_mapped = read(mapped[0], &ok, 1) == 1 && ok == 'm';
  SetFault(0);
  // The test build's line names the KVA it handed over: "... kernel virtual address %px as the PFN".
  uint64_t kaddr = 0;
  for (const auto& l : NewLogLines(mark)) {
    size_t at = l.find("kernel virtual address ");
    if (at != std::string::npos) kaddr = std::strtoull(l.c_str() + at + 23, nullptr, 16);
  }
  BadPte pte;
  pte.phys = ((kaddr + (kOffset >> 12)) << 12) & 0x000ffffffffff000ULL;
  pte.maxphys_bits = MaxPhysBits();
  pte.reserved_bits = pte.maxphys_bits > 0 && pte.maxphys_bits < 64 && pte.phys >> pte.maxphys_bits != 0;
  pte.system_ram = !pte.reserved_bits && InSystemRam(pte.phys);
  char verdict = child_mapped && kaddr != 0 && !pte.system_ram ? 'w' : 'n';
  if (write(go[1], &verdict, 1) != 1) verdict = 'n';
  int status = 0;
  waitpid(pid, &status, 0);
  close(mapped[0]), close(mapped[1]), close(go[0]), close(go[1]);
  char after = 0;
  bool read_back = pread(dev, &after, 1, kOffset) == 1;
  close(dev);
  bool corrupted = false, bad = false;
  for (const auto& l : NewLogLines(mark)) {
    if (l.find("Corrupted page table") != std::string::npos) corrupted = true;
    if (l.find("Bad pagetable") != std::string::npos) bad = true;
    Diag("console: %s", l.c_str());
  }
  if (!child_mapped) return Fail("the mmap with the bad PFN failed; the seed-002 bug maps without complaint");
  if (kaddr == 0) return Fail("the console lacks the test build's 'kernel virtual address ... as the PFN' line");
  Diag("PTE frame from KVA 0x%" PRIx64 ": phys 0x%" PRIx64 "; MAXPHYADDR %u bits: %s", kaddr, pte.phys,
       pte.maxphys_bits,
       pte.reserved_bits ? "reserved bits set" : pte.system_ram ? "inside System RAM" : "below it, no RAM there");
  if (pte.system_ram) {
    Diag("the bad PTE maps the guest's own RAM: mmap succeeded silently; not writing through it");
    return 0;
  }
  if (pte.reserved_bits) {
    if (WIFEXITED(status)) return Fail("the write survived a PTE with reserved bits: exit " + std::to_string(WEXITSTATUS(status)));
    Diag("writer killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (!corrupted || !bad) return Fail("console lacks 'Corrupted page table' / 'Bad pagetable'");
    return 0;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Fail("the write through a PTE to phys with no RAM should go nowhere and survive; wait status " +
                std::to_string(status));
  if (!read_back) return Fail("cannot read the marker byte back through read()");
  if (after != before) return Fail("the device's byte changed: the bad PTE reached the reserved range");
  if (corrupted || bad) return Fail("a reserved-bit fault for a PTE below MAXPHYADDR");
  Diag("the write went to phys 0x%" PRIx64 ", not to the device (its byte at 0x%lx is still '%c'): seed 002's silent form",
       pte.phys, static_cast<long>(kOffset), after);
  return 0;
}

// ---- c and load checks: the module refuses a range ----------------------------------------------

int CaseExpectRefused(const std::string& ko, const std::string& params, const std::string& errno_name,
                      const std::string& keyword) {
  size_t mark = KernelLog().size();
  int fd = open(ko.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail("cannot open " + ko);
  long rc = syscall(SYS_finit_module, fd, params.c_str(), 0);
  int err = errno;
  close(fd);
  if (rc == 0) {
    std::string name = ko.substr(ko.rfind('/') + 1);
    name = name.substr(0, name.find(".ko"));
    syscall(SYS_delete_module, name.c_str(), O_NONBLOCK);
    return Fail("module loaded with " + params + "; expected a refusal");
  }
  Diag("finit_module(%s) -> %s (%s)", params.c_str(), ErrName(err), std::strerror(err));
  bool said = false;
  for (const auto& l : NewLogLines(mark)) {
    if (l.find("taint") != std::string::npos) continue;  // unsigned module, FACTS.md
    Diag("console: %s", l.c_str());
    if (l.find(keyword) != std::string::npos && l.find(std::string("-") + errno_name) != std::string::npos)
      said = true;
  }
  if (errno_name != ErrName(err)) return Fail("expected errno " + errno_name);
  if (!said) return Fail("no dmesg line with '" + keyword + "' and -" + errno_name);
  return 0;
}

// ---- d: bad input -------------------------------------------------------------------------------

int CaseIoctlGarbage(const std::string& path) {
  size_t mark = KernelLog().size();
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return Fail("open " + path);
  int failures = 0;
  auto expect = [&](unsigned long cmd, void* arg, int want, const char* what) {
    errno = 0;
    int rc = ioctl(fd, cmd, arg);
    int got = rc == 0 ? 0 : errno;
    if (got != want) {
      Diag("%s: ioctl 0x%lx -> %s, expected %s", what, cmd, got ? ErrName(got) : "0",
           want ? ErrName(want) : "0");
      ++failures;
    }
  };
  expect(RESMEM_IOC_INFO, nullptr, EFAULT, "INFO with NULL");
  expect(RESMEM_IOC_INFO, reinterpret_cast<void*>(1), EFAULT, "INFO with address 1");
  expect(RESMEM_IOC_INFO, reinterpret_cast<void*>(0xffff800000000000ull), EFAULT, "INFO with a kernel address");
  expect(RESMEM_IOC_LENGTH, nullptr, EFAULT, "LENGTH with NULL");
  expect(RESMEM_IOC_PHYS, nullptr, EFAULT, "PHYS with NULL");
  resmem_test_pin pin{};
  expect(RESMEM_IOC_TEST_PIN, &pin, ENOTTY, "TEST_PIN on the production module");
  // Wrong direction/size encodings of the real numbers, and random commands.
  uint8_t buf[4096];
  expect(_IOW(RESMEM_IOC_MAGIC, 1, struct resmem_info), buf, ENOTTY, "INFO encoded as _IOW");
  expect(_IOR(RESMEM_IOC_MAGIC, 1, uint32_t), buf, ENOTTY, "INFO with the wrong size");
  DeterministicRng rng(kSeed);
  Diag("seed 0x%" PRIx64 ": 2000 random ioctl commands with random buffers", kSeed);
  for (int i = 0; i < 2000; ++i) {
    unsigned long cmd = static_cast<uint32_t>(rng.NextU64());
    if (cmd == RESMEM_IOC_INFO || cmd == RESMEM_IOC_LENGTH || cmd == RESMEM_IOC_PHYS) continue;
    for (auto& b : buf) b = static_cast<uint8_t>(rng.NextU64());
    errno = 0;
    int rc = ioctl(fd, cmd, buf);
    if (rc == 0 || (errno != ENOTTY && errno != EINVAL && errno != EFAULT)) {
      // The VFS answers a few generic commands itself (FIONBIO, FIOCLEX, ...): allowed.
      if (rc != 0) {
        Diag("random cmd 0x%lx -> %s", cmd, ErrName(errno));
        ++failures;
      }
    }
  }
  // The real ones still answer correctly afterwards.
  resmem_info info{};
  if (ioctl(fd, RESMEM_IOC_INFO, &info) != 0 || info.abi_version != RESMEM_ABI_VERSION) ++failures;
  uint64_t len = 0, phys = 0;
  if (ioctl(fd, RESMEM_IOC_LENGTH, &len) != 0 || len != info.size) ++failures;
  if (ioctl(fd, RESMEM_IOC_PHYS, &phys) != 0 || phys != info.phys_addr) ++failures;
  Diag("after the garbage: INFO abi %u size 0x%" PRIx64 " phys 0x%" PRIx64 " name %s",
       info.abi_version, static_cast<uint64_t>(info.size), static_cast<uint64_t>(info.phys_addr), info.name);
  close(fd);
  std::string bad;
  if (!NoOops(NewLogLines(mark), &bad)) return Fail("kernel complained: " + bad);
  return failures ? Fail(std::to_string(failures) + " ioctl answers were wrong") : 0;
}

int CaseMmapBounds(const std::string& path) {
  size_t mark = KernelLog().size();
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  const uint64_t size = dev->info.size;
  int fd = open(path.c_str(), O_RDWR);
  int failures = 0;
  struct Try {
    const char* what;
    uint64_t offset, length;
    int flags;
    int want;  // 0 = mapping works
  };
  const Try tries[] = {
      {"whole range", 0, size, MAP_SHARED, 0},
      {"last page", size - 4096, 4096, MAP_SHARED, 0},
      {"offset at the end", size, 4096, MAP_SHARED, EINVAL},
      {"last page + 1 past the end", size - 4096, 8192, MAP_SHARED, EINVAL},
      {"length one page too long", 0, size + 4096, MAP_SHARED, EINVAL},
      {"offset far past the end", 1ull << 46, 4096, MAP_SHARED, EINVAL},
      {"offset whose pages overflow", 0x7ffffffffffff000ull, 4096, MAP_SHARED, EINVAL},
      {"unaligned offset", 100, 4096, MAP_SHARED, EINVAL},
      {"length zero", 0, 0, MAP_SHARED, EINVAL},
      {"MAP_PRIVATE", 0, 4096, MAP_PRIVATE, EINVAL},
  };
  for (const Try& t : tries) {
    errno = 0;
    void* p = mmap(nullptr, t.length, PROT_READ | PROT_WRITE, t.flags, fd, static_cast<off_t>(t.offset));
    int got = p == MAP_FAILED ? errno : 0;
    Diag("mmap %-28s offset 0x%" PRIx64 " length 0x%" PRIx64 " -> %s", t.what, t.offset, t.length,
         got ? ErrName(got) : "mapped");
    if (got != t.want) ++failures;
    if (p != MAP_FAILED) {
      // The last byte of the mapping is the device's, readable and writable.
      volatile uint8_t* last = static_cast<uint8_t*>(p) + t.length - 1;
      *last = 0x5a;
      if (*last != 0x5a) ++failures;
      munmap(p, t.length);
    }
  }
  close(fd);
  std::string bad;
  if (!NoOops(NewLogLines(mark), &bad)) return Fail("kernel complained: " + bad);
  for (const auto& l : NewLogLines(mark)) Diag("console: %s", l.c_str());
  return failures ? Fail(std::to_string(failures) + " mmap answers were wrong") : 0;
}

uint64_t Pattern(uint64_t seed, uint64_t i) { return (seed * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull); }

int CaseConcurrent(const std::vector<std::string>& paths) {
  size_t mark = KernelLog().size();
  std::atomic<int> failures{0};
  auto worker = [&](int id) {
    DeterministicRng rng(kSeed + id);
    for (int it = 0; it < 40; ++it) {
      const std::string& path = paths[rng.Below(paths.size())];
      int fd = open(path.c_str(), O_RDWR);
      if (fd < 0) { ++failures; continue; }
      uint64_t off = (rng.Below(8)) << 20;
      size_t len = (1 + rng.Below(4)) << 20;
      // Each worker owns its own 64 KiB stripe so that concurrent writers do not collide.
      auto* p = static_cast<uint64_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off));
      if (p == MAP_FAILED) { ++failures; close(fd); continue; }
      uint64_t* stripe = p + (id * 65536 / 8) % (len / 8 - 8192);
      for (int k = 0; k < 8192; ++k) stripe[k] = Pattern(id, k + it);
      for (int k = 0; k < 8192; ++k)
        if (stripe[k] != Pattern(id, k + it)) { ++failures; break; }
      munmap(p, len);
      close(fd);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(worker, i);
  std::vector<pid_t> kids;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      failures = 0;
      worker(8 + i);
      _exit(failures ? 1 : 0);
    }
    kids.push_back(pid);
  }
  for (auto& t : threads) t.join();
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failures;
  }
  Diag("8 threads + 4 processes x 40 open/mmap/write/verify/munmap/close on %zu devices (seed 0x%" PRIx64 "): %d failures",
       paths.size(), kSeed, failures.load());
  std::string bad;
  if (!NoOops(NewLogLines(mark), &bad)) return Fail("kernel complained: " + bad);
  return failures ? Fail("concurrent users saw errors") : 0;
}

uint64_t VmPteKb() {
  for (const auto& l : Lines(ReadFile("/proc/self/status")))
    if (l.rfind("VmPTE:", 0) == 0) return std::strtoull(l.c_str() + 6, nullptr, 10);
  return 0;
}

// The huge= parameter of the loaded driver: the test build's when it is the one loaded.
std::string HugeParam() {
  const std::string test = "/sys/module/resmem_test/parameters/huge";
  return access(test.c_str(), F_OK) == 0 ? test : "/sys/module/resmem/parameters/huge";
}
bool SetHuge(bool on) { return WriteFile(HugeParam(), on ? "1" : "0"); }
bool HugeNow() { return ReadFile(HugeParam()).rfind('Y', 0) == 0; }

// The kernel's transparent-hugepage policy: the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"), or "" without THP.
std::string ThpPolicy() {
  const std::string text = ReadFile("/sys/kernel/mm/transparent_hugepage/enabled");
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text.substr(open + 1, close - open - 1);
}

// Two threads, one per CPU, released together, write one word each into every 2 MiB of a fresh
// mapping in the same order, so the two first touches of each 2 MiB meet.
struct TogetherResult {
  bool mapped = false;
  int wrong = 0;        // words that read back wrong
  uint64_t pte_kb = 0;  // page tables the touches added (0: every 2 MiB took one entry)
};
TogetherResult TouchTogether(const std::string& path, uint64_t len, uint64_t round) {
  TogetherResult r;
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return r;
  auto* p = static_cast<volatile uint64_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  if (p == MAP_FAILED) return r;
  r.mapped = true;
  const uint64_t chunks = len >> 21;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  auto word = [&](uint64_t chunk, int t) { return (round << 32) | (chunk << 8) | static_cast<uint64_t>(t); };
  auto toucher = [&](int t) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(t, &cpus);
    sched_setaffinity(0, sizeof cpus, &cpus);  // best effort: one CPU each where there are two
    ready.fetch_add(1);
    while (!go.load()) {
    }
    for (uint64_t c = 0; c < chunks; ++c) p[(c << 18) + 8 * t] = word(c, t);
  };
  std::thread a(toucher, 0), b(toucher, 1);
  while (ready.load() < 2) {
  }
  const uint64_t pte0 = VmPteKb();  // after the threads' stacks have their page tables
  go.store(true);
  a.join();
  b.join();
  r.pte_kb = VmPteKb() - pte0;
  for (uint64_t c = 0; c < chunks; ++c)
    for (int t = 0; t < 2; ++t) r.wrong += p[(c << 18) + 8 * t] != word(c, t);
  munmap(const_cast<uint64_t*>(p), len);
  return r;
}

// Concurrent first touches of the same 2 MiB (huge=1), under each THP policy the kernel offers:
// "always" routes the fault through ->huge_fault, "never" through ->fault, which inserts 2 MiB
// entries too. The thread that comes second must take the entry the first one installed. Falling
// back to 4 KiB under it answers VM_FAULT_OOM (get_locked_pte finds no page table under a 2 MiB
// entry), which the kernel retries after logging "VM_FAULT_OOM leaked out to the #PF handler"
// (mm/oom_kill.c pagefault_out_of_memory): the case fails on that line and on any kernel complaint.
// Where the mode takes no 2 MiB entries (pfnmap without pmd_special) it says so and still checks
// the words. race (the test build): fault=3 sleeps every other 2 MiB fault before it reads the
// PMD, so the other thread's entry is there first and the meeting happens every time.
int CaseConcurrentFirstTouch(const std::string& path, int rounds, bool race) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  const uint64_t len = std::min<uint64_t>(dev->info.size, 64ull << 20) & ~((2ull << 20) - 1);
  if (len == 0) return Fail(path + " is smaller than 2 MiB: no 2 MiB entry to race for");
  const char* kThp = "/sys/kernel/mm/transparent_hugepage/enabled";
  const std::string policy = ThpPolicy();
  std::vector<std::string> policies = {""};  // no THP in this kernel: ->fault alone
  if (!policy.empty()) policies = {"always", "never"};
  const size_t mark = KernelLog().size();
  const bool huge_before = HugeNow();
  if (!SetHuge(true)) return Fail("cannot set " + HugeParam());
  if (race && SetFault(3) != 0) return Fail("cannot set fault=3 (is resmem_test.ko loaded?)");
  // The kernel's line is rate-limited (10 per 5 s: mm/oom_kill.c pfoom_rs); wait out a window an
  // earlier case may have opened, so this case's lines are printed.
  if (KernelLog().find("VM_FAULT_OOM") != std::string::npos) sleep(6);
  int wrong = 0, failed_maps = 0;
  std::string error, tables;
  for (const std::string& pol : policies) {
    if (!pol.empty() && !WriteFile(kThp, pol)) {
      error = "cannot write " + pol + " to " + kThp;
      break;
    }
    for (int r = 0; r < rounds; ++r) {
      const TogetherResult t = TouchTogether(path, len, static_cast<uint64_t>(r));
      failed_maps += !t.mapped;
      wrong += t.wrong;
      // The last round's: the first also pays for the page tables of the threads' stacks.
      if (r == rounds - 1) tables += (tables.empty() ? "" : ", ") + (pol.empty() ? "-" : pol) + " " + std::to_string(t.pte_kb) + " kB";
    }
  }
  if (!policy.empty()) WriteFile(kThp, policy);
  SetHuge(huge_before);
  if (race) SetFault(0);
  if (!error.empty()) return Fail(error);
  const auto lines = NewLogLines(mark);
  int leaked = 0;
  for (const auto& l : lines)
    leaked += l.find("VM_FAULT_OOM") != std::string::npos || l.find("pagefault_out_of_memory") != std::string::npos;
  Diag("%s %s%s: %d rounds x %" PRIu64 " x 2 MiB per THP policy (was %s), 2 threads released together; page "
       "tables of the last round (0: 2 MiB entries): %s; %d words wrong, %d maps failed, %d VM_FAULT_OOM lines (or lines of them suppressed)",
       path.c_str(), MapModeName(dev->info.mode), race ? " (fault=3: every other 2 MiB fault waits)" : "", rounds, len >> 21, policy.empty() ? "no THP" : policy.c_str(),
       tables.c_str(), wrong, failed_maps, leaked);
  if (leaked) return Fail("a fault fell back to 4 KiB under another thread's 2 MiB entry (VM_FAULT_OOM)");
  std::string bad;
  if (!NoOops(lines, &bad)) return Fail("kernel complained: " + bad);
  if (failed_maps || wrong) return Fail("concurrent first touches lost words or mappings");
  return 0;
}

int CaseUnloadWhileMapped(const std::string& path, const std::string& module) {
  size_t mark = KernelLog().size();
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return Fail("open " + path);
  auto* p = static_cast<uint64_t*>(mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) return Fail("mmap");
  close(fd);  // the mapping alone keeps the file (and so the module) in use
  p[0] = 0x1234;
  long rc = syscall(SYS_delete_module, module.c_str(), O_NONBLOCK);
  int err = errno;
  Diag("delete_module(%s) while mapped -> %s", module.c_str(), rc == 0 ? "unloaded!" : ErrName(err));
  bool ok = rc != 0 && (err == EWOULDBLOCK || err == EBUSY) && p[0] == 0x1234;
  p[1] = 0x5678;
  ok = ok && p[1] == 0x5678;
  munmap(p, 1 << 20);
  std::string bad;
  if (!NoOops(NewLogLines(mark), &bad)) return Fail("kernel complained: " + bad);
  return ok ? 0 : Fail("the module must refuse to unload while a mapping holds the device");
}

// A load that fails after its device nodes exist must leave no open file behind: the kernel frees a
// module whose init failed whatever its reference count, so a file opened during the load would
// point at freed code. The test build fails its load fail_load_ms after registering the nodes
// (kmod/resmem.c); a thread tries to open DEV all along, as a program started with the load would.
int CaseOpenDuringFailedLoad(const std::string& ko, const std::string& params, const std::string& dev) {
  size_t mark = KernelLog().size();
  std::atomic<bool> done{false};
  std::atomic<int> refused{0}, other{0}, opened{-1};
  std::thread opener([&] {
    while (!done.load() && opened.load() < 0) {
      int fd = open(dev.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) opened = fd;
      else if (errno == EAGAIN) ++refused;
      else if (errno != ENOENT) ++other;
      usleep(500);
    }
  });
  int kfd = open(ko.c_str(), O_RDONLY | O_CLOEXEC);
  long rc = kfd < 0 ? -1 : syscall(SYS_finit_module, kfd, params.c_str(), 0);
  int err = errno;
  if (kfd >= 0) close(kfd);
  done = true;
  opener.join();
  Diag("finit_module(%s) -> %s; opens of %s meanwhile: %d refused with EAGAIN, %d other errors, %s",
       params.c_str(), rc == 0 ? "0" : ErrName(err), dev.c_str(), refused.load(), other.load(),
       opened.load() >= 0 ? "one opened it" : "none opened it");
  for (const auto& l : NewLogLines(mark))
    if (l.find("TEST fault") != std::string::npos || l.find("open refused") != std::string::npos)
      Diag("console: %s", l.c_str());
  if (rc == 0) {
    syscall(SYS_delete_module, "resmem_test", O_NONBLOCK);
    return Fail("the load succeeded: the test build should have failed it (fail_load_ms)");
  }
  if (opened.load() >= 0) {
    // Its file's operations are the freed module's: a child touches it, and its death is the proof.
    pid_t pid = fork();
    if (pid == 0) {
      resmem_info info{};
      _exit(ioctl(opened.load(), RESMEM_IOC_INFO, &info) == 0 ? 0 : 3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Diag("ioctl(INFO) on that file after the failed load: %s",
         WIFSIGNALED(status) ? "the child was killed (it ran freed code)" : "returned");
    return Fail("a program opened " + dev + " during a load that then failed: its file outlives the module");
  }
  if (refused.load() == 0) return Fail("no open met the window: the node never appeared during the load");
  std::string bad;
  if (!NoOops(NewLogLines(mark), &bad)) return Fail("kernel complained: " + bad);
  return 0;
}

// pages mode: page references taken through a mapping outlive it (here vmsplice into a pipe;
// io_uring fixed buffers and O_DIRECT do the same). While the pipe holds them the module must not
// unload: memunmap_pages would free the struct pages under the pipe. Once the pipe is read and
// closed, the module lets go within about a second (kmod/resmem.c resmem_refs_work).
int CasePipeHoldsPages(const std::string& path, const std::string& module) {
  size_t mark = KernelLog().size();
  const size_t len = 4 * 4096;
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC), pfd[2];
  if (fd < 0 || pipe(pfd) != 0) return Fail("open " + path + " or pipe");
  auto* p = static_cast<uint64_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) return Fail("mmap");
  for (size_t i = 0; i < len / 8; ++i) p[i] = Pattern(kSeed, i);
  iovec iov{p, len};
  ssize_t spliced = vmsplice(pfd[1], &iov, 1, 0);
  munmap(p, len);
  close(fd);
  long rc = syscall(SYS_delete_module, module.c_str(), O_NONBLOCK);
  int err = errno;
  Diag("vmsplice of %zd bytes of %s into a pipe, munmap, close; delete_module(%s) -> %s", spliced,
       path.c_str(), module.c_str(), rc == 0 ? "unloaded" : ErrName(err));
  if (spliced != static_cast<ssize_t>(len)) return Fail("vmsplice did not take the pages");
  if (rc == 0)  // the pipe's fds stay open: closing them would touch the freed struct pages
    return Fail("the module unloaded while a pipe held 4 of its pages (memunmap_pages under them)");
  std::vector<uint64_t> got(len / 8);
  ssize_t n = read(pfd[0], got.data(), len);
  uint64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += got[i] != Pattern(kSeed, i);
  close(pfd[0]);
  close(pfd[1]);
  Diag("read %zd bytes back from the pipe, %" PRIu64 " words wrong", n, bad);
  auto t0 = std::chrono::steady_clock::now();
  while (syscall(SYS_delete_module, module.c_str(), O_NONBLOCK) != 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    usleep(50000);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  bool unloaded = ("\n" + ReadFile("/proc/modules")).find("\n" + module + " ") == std::string::npos;
  Diag("after the pipe was closed: %s after %lld ms", unloaded ? "unloaded" : "still loaded", static_cast<long long>(ms));
  for (const auto& l : NewLogLines(mark))
    if (l.find("referenced") != std::string::npos) Diag("console: %s", l.c_str());
  std::string oops;
  if (!NoOops(NewLogLines(mark), &oops)) return Fail("kernel complained: " + oops);
  if (n != static_cast<ssize_t>(len) || bad) return Fail("the pipe's data is not what was written");
  return unloaded ? 0 : Fail("the module did not unload after the last reference was gone");
}

// Maps the page at `off` of path, fills it with Pattern(seed, i), splices it into the pipe's write
// end, then unmaps it and closes the file: the pipe then holds the page's only reference.
bool SplicePage(const std::string& path, uint64_t off, int pipe_w, uint64_t seed) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  auto* p = static_cast<uint64_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(off)));
  close(fd);
  if (p == MAP_FAILED) return false;
  for (size_t i = 0; i < 4096 / 8; ++i) p[i] = Pattern(seed, i);
  iovec iov{p, 4096};
  const ssize_t n = vmsplice(pipe_w, &iov, 1, 0);
  munmap(p, 4096);
  return n == 4096;
}

// Reads the page a pipe holds and closes both ends: the words that differ from Pattern(seed, i),
// or -1 when fewer than 4096 bytes came back.
int DrainPipe(int fds[2], uint64_t seed) {
  std::vector<uint64_t> got(4096 / 8);
  const ssize_t n = read(fds[0], got.data(), 4096);
  close(fds[0]);
  close(fds[1]);
  if (n != 4096) return -1;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += got[i] != Pattern(seed, i);
  return bad;
}

double Now();

// Waits up to `seconds` for a kernel log line after `mark` that contains `text`.
// 0 seconds: looks once.
bool WaitForLogLine(size_t mark, const std::string& text, double seconds) {
  for (const double t0 = Now();; usleep(20000)) {
    for (const auto& l : NewLogLines(mark))
      if (l.find(text) != std::string::npos) return true;
    if (Now() - t0 >= seconds) return false;
  }
}

long ModuleRefcnt(const std::string& module) {
  const std::string text = ReadFile("/sys/module/" + module + "/refcnt");
  return text.empty() ? -1 : std::strtol(text.c_str(), nullptr, 10);
}

// The hold of CasePipeHoldsPages must not let go while a reference its once-a-second scan already
// went past is out (the test build; kmod/resmem.c resmem_refs_work). fault=4 pauses the scan 2 s
// once it is past the range's first page. In that pause page 0 is spliced into pipe B through a
// new mapping, whose last unmap finds the hold already taken, and pipe A, which holds the page at
// 4 MiB, is drained. The scan then finds nothing; without a second look the module would let go
// with page 0 still in pipe B, and an rmmod would free the struct page under it. The case never
// unloads: it reads the hold from the module's refcnt.
int CaseRefsBehindScan(const std::string& path, const std::string& module) {
  const uint64_t far = 4ull << 20;  // past the first 2 MiB folio
  {
    auto dev = OpenDevice(path);
    if (!dev.ok()) return Fail(dev.status().ToString());
    if (dev->info.size < far + 4096) return Fail(path + " is smaller than 4 MiB + 4 KiB");
  }
  const size_t mark = KernelLog().size();
  const long base = ModuleRefcnt(module);
  if (base < 0) return Fail("cannot read /sys/module/" + module + "/refcnt");
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) return Fail("pipe");
  if (SetFault(4) != 0) return Fail("cannot set fault=4 (is resmem_test.ko loaded?)");
  const bool spliced_a = SplicePage(path, far, a[1], kSeed);
  const bool held = ModuleRefcnt(module) == base + 1;
  const bool paused = spliced_a && WaitForLogLine(mark, "reference scan pauses", 10);
  SetFault(0);  // the scans after this one run straight through
  const bool spliced_b = paused && SplicePage(path, 0, b[1], kSeed + 1);
  const int bad_a = DrainPipe(a, kSeed);
  // Both steps must land inside the pause, or the case shows nothing.
  const bool in_pause = !WaitForLogLine(mark, "reference scan goes on", 0);
  const bool resumed = WaitForLogLine(mark, "reference scan goes on", 10);
  bool let_go = false;
  for (double t0 = Now(); resumed && !let_go && Now() - t0 < 1.5; usleep(20000)) let_go = ModuleRefcnt(module) <= base;
  const int bad_b = DrainPipe(b, kSeed + 1);
  bool released = false;
  for (double t0 = Now(); !released && Now() - t0 < 5; usleep(50000)) released = ModuleRefcnt(module) == base;
  Diag("refcnt %ld before; pipe A (page at 4 MiB) spliced %s, hold %s; the scan paused %s; pipe B (page 0) spliced %s, "
       "pipe A drained (%d words wrong) %s the pause; after the scan went on the hold %s; pipe B drained (%d words "
       "wrong); the hold %s", base, spliced_a ? "yes" : "no", held ? "taken" : "not taken", paused ? "yes" : "no",
       spliced_b ? "yes" : "no", bad_a, in_pause ? "inside" : "after", let_go ? "WAS LET GO" : "stayed", bad_b,
       released ? "let go within 5 s" : "still taken after 5 s");
  for (const auto& l : NewLogLines(mark))
    if (l.find("referenced") != std::string::npos || l.find("TEST") != std::string::npos) Diag("console: %s", l.c_str());
  std::string oops;
  if (!NoOops(NewLogLines(mark), &oops)) return Fail("kernel complained: " + oops);
  if (!spliced_a || !held || !paused || !spliced_b || bad_a || bad_b)
    return Fail("the set-up did not happen as planned (see above)");
  if (!in_pause) return Fail("the steps took longer than the scan's pause: nothing shown");
  if (let_go) return Fail("the module let go of its hold while pipe B held page 0, a reference taken behind its scan");
  return released ? 0 : Fail("the hold was not let go after the last reference was gone");
}

// ---- e: data integrity --------------------------------------------------------------------------

int CaseIntegrity(const std::string& path) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  MapRequest a_req, b_req;
  a_req.length = 16 << 20;
  b_req.offset = 4 << 20;  // overlaps a's [4 MiB, 12 MiB)
  b_req.length = 8 << 20;
  auto a = dev->handle->Map(a_req);
  auto b = dev->handle->Map(b_req);
  if (!a.ok() || !b.ok()) return Fail("mmap failed");
  auto* pa = reinterpret_cast<uint64_t*>(a.value()->data());
  auto* pb = reinterpret_cast<uint64_t*>(b.value()->data());
  const uint64_t words = a_req.length / 8, seed = kSeed ^ dev->info.phys_addr;
  for (uint64_t i = 0; i < words; ++i) pa[i] = Pattern(seed, i);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < b_req.length / 8; ++i)
    if (pb[i] != Pattern(seed, i + b_req.offset / 8)) ++bad;
  uint64_t sum_a = Fnv1a64(pa, a_req.length);
  Diag("%s: wrote 16 MiB through mapping A, %" PRIu64 " mismatched words through mapping B; FNV-1a 0x%016" PRIx64,
       path.c_str(), bad, sum_a);
  if (bad) return Fail("mapping B disagrees with mapping A");
  // A second process opens the device afresh, checks the sum, and answers through it.
  pid_t pid = fork();
  if (pid == 0) {
    auto d2 = OpenDevice(path);
    if (!d2.ok()) _exit(2);
    auto m = d2->handle->Map(a_req);
    if (!m.ok()) _exit(3);
    uint64_t* q = reinterpret_cast<uint64_t*>(m.value()->data());
    if (Fnv1a64(q, a_req.length) != sum_a) _exit(4);
    for (uint64_t i = 0; i < 4096; ++i) q[i] = ~Pattern(seed, i);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return Fail("second process failed (status " + std::to_string(st) + ")");
  for (uint64_t i = 0; i < 4096; ++i)
    if (pa[i] != ~Pattern(seed, i)) return Fail("second process's answer not visible in the first");
  Diag("second process saw the same FNV-1a and its answer arrived through mapping A");
  return 0;
}

int CaseHugeSavesPageTables(const std::string& path);

// ---- bench --------------------------------------------------------------------------------------

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct TouchResult {
  double map_s = 0, touch_s = 0;
  uint64_t pte_kb = 0;
  bool ok = false;
};

// between, when set, runs after the mmap and before the first touch (untimed).
TouchResult MapAndTouch(const std::string& path, uint64_t len, const std::function<void()>& between = nullptr) {
  TouchResult r;
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return r;
  uint64_t pte0 = VmPteKb();
  double t0 = Now();
  auto* p = static_cast<volatile uint8_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p != MAP_FAILED && between) between();
  double t1 = Now();
  if (p == MAP_FAILED) { close(fd); return r; }
  for (uint64_t off = 0; off < len; off += 4096) p[off] = 1;
  double t2 = Now();
  r.pte_kb = VmPteKb() - pte0;
  munmap(const_cast<uint8_t*>(p), len);
  close(fd);
  r.map_s = t1 - t0;
  r.touch_s = t2 - t1;
  r.ok = true;
  return r;
}

int CaseHugeSavesPageTables(const std::string& path) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  uint64_t len = dev->info.size;
  SetHuge(false);
  TouchResult small = MapAndTouch(path, len);
  SetHuge(true);
  TouchResult big = MapAndTouch(path, len);
  Diag("%s %s: page tables after touching %s: 4 KiB mappings %" PRIu64 " kB, 2 MiB mappings %" PRIu64 " kB",
       path.c_str(), MapModeName(dev->info.mode), FormatSize(len).c_str(), small.pte_kb, big.pte_kb);
  if (!small.ok || !big.ok) return Fail("map/touch failed");
  uint64_t expect_small = len / 4096 * 8 / 1024;  // one 8-byte PTE per 4 KiB page
  if (small.pte_kb < expect_small) return Fail("4 KiB mappings used fewer page tables than one PTE per page");
  if (big.pte_kb * 8 > small.pte_kb) return Fail("2 MiB mappings did not save page tables");
  return 0;
}

// huge= is taken once per mapping, at mmap (kmod/resmem.c resmem_huge_vm_ops): a mapping made with
// huge=1 keeps taking 2 MiB entries after huge=0 is written, and one made with huge=0 keeps 4 KiB
// entries after huge=1. Read at each fault instead, a change between two threads' faults of the
// same 2 MiB would send the second the 4 KiB way under the first's 2 MiB entry (VM_FAULT_OOM, or
// the 7.3 debug kernel's VM_BUG_ON: docs/kmod.md "Two faults of the same 2 MiB at once"). Where
// the device takes no 2 MiB entries on this kernel (pfnmap without pmd_special) the case says so
// and skips.
int CaseHugeKeptPerMapping(const std::string& path) {
  auto dev = OpenDevice(path);
  if (!dev.ok()) return Fail(dev.status().ToString());
  const uint64_t len = std::min<uint64_t>(dev->info.size, 64ull << 20) & ~((2ull << 20) - 1);
  if (len == 0) return Fail(path + " is smaller than 2 MiB: no 2 MiB entry to keep");
  const bool huge_before = HugeNow();
  if (!SetHuge(true)) return Fail("cannot set " + HugeParam());
  const TouchResult control = MapAndTouch(path, len);  // huge=1 throughout
  const TouchResult kept_on = MapAndTouch(path, len, [] { SetHuge(false); });
  const TouchResult kept_off = MapAndTouch(path, len, [] { SetHuge(true); });  // made under huge=0
  SetHuge(huge_before);
  const uint64_t small = len / 4096 * 8 / 1024;  // kB of page tables for one PTE per 4 KiB page
  Diag("%s %s, %s: page tables after touching every 4 KiB: huge=1 throughout %" PRIu64 " kB; made with huge=1, "
       "touched after huge=0 %" PRIu64 " kB; made with huge=0, touched after huge=1 %" PRIu64 " kB (one PTE per page: %" PRIu64 " kB)",
       path.c_str(), MapModeName(dev->info.mode), FormatSize(len).c_str(), control.pte_kb, kept_on.pte_kb,
       kept_off.pte_kb, small);
  if (!control.ok || !kept_on.ok || !kept_off.ok) return Fail("map/touch failed");
  if (control.pte_kb * 8 > small) {
    WriteFile("/tmp/tap_skip", std::string(MapModeName(dev->info.mode)) +
                                   " takes no 2 MiB entries on this kernel (huge=1 throughout used " +
                                   std::to_string(control.pte_kb) + " kB of page tables): no setting to keep");
    return 0;
  }
  if (kept_on.pte_kb * 8 > small) return Fail("a mapping made with huge=1 took 4 KiB entries once huge=0 was written");
  if (kept_off.pte_kb < small) return Fail("a mapping made with huge=0 took 2 MiB entries once huge=1 was written");
  return 0;
}

int Bench(const std::vector<std::string>& paths) {
  Diag("bench: TCG emulation; figures are for comparison inside this guest only");
  // 1. Map and first-touch the 1 GiB pages-mode device with 4 KiB and 2 MiB mappings.
  auto dev0 = OpenDevice(paths[0]);
  if (!dev0.ok()) return Fail(dev0.status().ToString());
  uint64_t len = dev0->info.size;
  for (bool huge : {false, true}) {
    SetHuge(huge);
    TouchResult best;
    for (int rep = 0; rep < 3; ++rep) {
      TouchResult r = MapAndTouch(paths[0], len);
      if (!r.ok) return Fail("map/touch failed");
      if (rep == 0 || r.touch_s < best.touch_s) best = r;
    }
    std::printf("BENCH map+first-touch %s %s %s mappings: mmap %.3f ms, first touch %.1f ms (%.0f MB/s of address space), page tables %" PRIu64 " kB (best of 3)\n",
                FormatSize(len).c_str(), MapModeName(dev0->info.mode), huge ? "2 MiB" : "4 KiB",
                best.map_s * 1e3, best.touch_s * 1e3, len / best.touch_s / 1e6, best.pte_kb);
  }
  SetHuge(true);
  // 2. memcpy bandwidth per cache type: 64 MiB, read from and write to the device, best of 3.
  const size_t n = 64 << 20;
  std::vector<uint8_t> host(n, 7);
  auto copy_rate = [&](uint8_t* dst, const uint8_t* src) {
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      double t0 = Now();
      std::memcpy(dst, src, n);
      best = std::min(best, Now() - t0);
    }
    return n / best / 1e6;
  };
  std::vector<uint8_t> other(n, 9);
  std::printf("BENCH memcpy 64 MiB anonymous->anonymous (reference): %.0f MB/s\n", copy_rate(other.data(), host.data()));
  for (const auto& path : paths) {
    auto dev = OpenDevice(path);
    if (!dev.ok()) return Fail(dev.status().ToString());
    MapRequest req;
    req.length = n;
    auto mem = dev->handle->Map(req);
    if (!mem.ok()) return Fail(mem.status().ToString());
    uint8_t* p = mem.value()->data();
    double wr = copy_rate(p, host.data());
    double rd = copy_rate(host.data(), p);
    std::printf("BENCH memcpy 64 MiB %s (%s, cache=%s): write to device %.0f MB/s, read from device %.0f MB/s\n",
                path.c_str(), MapModeName(dev->info.mode), CacheTypeName(dev->info.cache), wr, rd);
  }
  std::printf("BENCH PAT memory types (/sys/kernel/debug/x86/pat_memtype_list):\n");
  for (const auto& path : paths) {
    auto dev = OpenDevice(path);
    char start[32];
    std::snprintf(start, sizeof(start), "[mem 0x%016" PRIx64 "-", dev->info.phys_addr);
    for (const auto& l : Lines(ReadFile("/sys/kernel/debug/x86/pat_memtype_list")))
      if (l.find(start) != std::string::npos) std::printf("BENCH   %s %s\n", path.c_str(), l.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// ---- access control (issue 10 item 5): the udev rule applied, and who may open the device ----

// The gid of `name` in /etc/group (the guest's, written by kmod_lane.sh), or -1.
long GroupId(const std::string& name) {
  std::istringstream in(ReadFile("/etc/group"));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fs(line);
    for (std::string x; std::getline(fs, x, ':');) f.push_back(x);
    if (f.size() >= 3 && f[0] == name) return std::strtol(f[2].c_str(), nullptr, 10);
  }
  return -1;
}

// The value of KEY="..." in the first rule line of a udev rules file, or "".
std::string RuleValue(const std::string& rules, const std::string& key) {
  std::istringstream in(rules);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t at = line.find(key + "=\"");
    if (at == std::string::npos || (at > 0 && line[at - 1] != ' ' && line[at - 1] != ',')) continue;
    const size_t start = at + key.size() + 2, end = line.find('"', start);
    return end == std::string::npos ? "" : line.substr(start, end - start);
  }
  return "";
}

// The device node carries the owner, group and mode the rule names (OWNER defaults to root).
int CaseUdevRule(const std::string& path, const std::string& rules_path) {
  const std::string rules = ReadFile(rules_path);
  if (rules.empty()) return Fail("cannot read the rule " + rules_path);
  const std::string owner = RuleValue(rules, "OWNER"), group = RuleValue(rules, "GROUP"),
                    mode = RuleValue(rules, "MODE");
  Diag("rule %s: OWNER=%s GROUP=%s MODE=%s", rules_path.c_str(), owner.empty() ? "(root)" : owner.c_str(),
       group.c_str(), mode.c_str());
  if (group.empty() || mode.empty()) return Fail("the rule names no GROUP or MODE");
  const long gid = GroupId(group);
  if (gid < 0) return Fail("group " + group + " is not in /etc/group");
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Fail("stat " + path + ": " + std::strerror(errno));
  const unsigned want_mode = static_cast<unsigned>(std::strtoul(mode.c_str(), nullptr, 8));
  Diag("%s: uid %u gid %u mode %04o (want uid 0 gid %ld mode %04o)", path.c_str(), st.st_uid,
       st.st_gid, st.st_mode & 07777, gid, want_mode);
  if (!owner.empty() && owner != "root") return Fail("the lane knows only OWNER root, the rule says " + owner);
  if (st.st_uid != 0) return Fail("owner is uid " + std::to_string(st.st_uid) + ", not root");
  if (static_cast<long>(st.st_gid) != gid)
    return Fail("group is gid " + std::to_string(st.st_gid) + ", not " + group + " (" +
                std::to_string(gid) + "): the rule was not applied");
  if ((st.st_mode & 07777) != want_mode) return Fail("mode differs from the rule's");
  return 0;
}

// Opens DEV (read-write, then read-only) as uid/gid with the supplementary groups named ("-":
// none) in a child process. want "ok": both open, and a page maps, takes a word and gives it back;
// want an errno name: both opens fail with it.
int CaseOpenAs(uid_t uid, gid_t gid, const std::string& groups, const std::string& path,
               const std::string& want) {
  std::vector<gid_t> extra;
  if (groups != "-") {
    std::stringstream gs(groups);
    for (std::string g; std::getline(gs, g, ',');) {
      const long id = GroupId(g);
      if (id < 0) return Fail("group " + g + " is not in /etc/group");
      extra.push_back(static_cast<gid_t>(id));
    }
  }
  int pipefd[2];
  if (pipe(pipefd) != 0) return Fail("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    char msg[256];
    auto report = [&](int code, const char* fmt, int a, int b) {
      int n = std::snprintf(msg, sizeof msg, fmt, a, b);
      if (write(pipefd[1], msg, n) < 0) _exit(99);
      _exit(code);
    };
    if (setgroups(extra.size(), extra.data()) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
      report(98, "cannot become uid %d gid %d", static_cast<int>(uid), static_cast<int>(gid));
    const int rw = open(path.c_str(), O_RDWR);
    const int rw_err = errno;
    const int ro = open(path.c_str(), O_RDONLY);
    const int ro_err = errno;
    if (want != "ok") {
      const int expect = ErrnoFromName(want);
      if (rw >= 0 || ro >= 0) report(1, "opened (O_RDWR fd %d, O_RDONLY fd %d)", rw, ro);
      if (rw_err != expect || ro_err != expect) report(1, "open failed with errno %d / %d", rw_err, ro_err);
      report(0, "O_RDWR and O_RDONLY: errno %d / %d", rw_err, ro_err);
    }
    if (rw < 0 || ro < 0) report(1, "open failed: O_RDWR errno %d, O_RDONLY errno %d", rw < 0 ? rw_err : 0, ro < 0 ? ro_err : 0);
    auto* p = static_cast<volatile uint64_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0));
    if (p == MAP_FAILED) report(1, "mmap failed: errno %d (fd %d)", errno, rw);
    p[1] = 0x5eed0000u + uid;
    const bool back = p[1] == 0x5eed0000u + uid;
    munmap((void*)p, 4096);
    report(back ? 0 : 1, back ? "opened, mapped, word round-trips (fds %d, %d)" : "word did not round-trip (%d %d)", rw, ro);
  }
  close(pipefd[1]);
  char buf[256] = {};
  const ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Diag("as uid %u gid %u groups %s: %s", uid, gid, groups.c_str(), n > 0 ? buf : "(no report)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Fail("want " + want + " opening " + path);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: resmem_guest CASE [ARGS]\n"
               "  facts DEV pfnmap|pages       a: VmFlags from smaps + CUDA model decisions\n"
               "  pin DEV yes|no               a: long-term pin via the test build's ioctl\n"
               "  cache-types DEV...           a: PAT type of each device matches cache=\n"
               "  huge-page-tables DEV         bench check: 2 MiB mappings save page tables\n"
               "  fault-sigbus DEV             b: failing fault handler (test build)\n"
               "  corrupted-page-table DEV     b: seed-002 reproduction (test build)\n"
               "  expect-refused KO PARAMS ERRNO KEYWORD   c: load refused with errno and reason\n"
               "  ioctl-garbage DEV | mmap-bounds DEV | concurrent DEV... | unload-while-mapped DEV MODULE\n"
               "  concurrent-first-touch DEV ROUNDS [race]   d: two threads fault the same 2 MiB at once\n"
               "                               (race: the test build's fault=3 makes them meet)\n"
               "  open-during-failed-load KO PARAMS DEV   d: a failed load leaves no open file\n"
               "  pipe-holds-pages DEV MODULE  d: page references past close keep the module loaded\n"
               "  refs-behind-scan DEV MODULE  b: a reference taken behind the hold's scan keeps it (test build, fault=4)\n"
               "  huge-kept-per-mapping DEV    d: a mapping keeps the huge= it was made with\n"
               "  integrity DEV                e: two mappings and a second process agree\n"
               "  bench DEV...                 figures (first DEV: the big pages-mode device)\n"
               "  udev-rule DEV RULES          access: DEV has the rule's owner, group and mode\n"
               "  open-as UID GID GROUPS|- DEV ok|ERRNO   access: opening as that user gives ok or ERRNO\n");
  return 2;
}

int Main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 3) return Usage();
  std::string c = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (c == "facts" && argc == 4) return CaseFacts(rest[0], rest[1] == "pfnmap");
  if (c == "pin" && argc == 4) return CasePin(rest[0], rest[1] == "yes");
  if (c == "cache-types") return CaseCacheTypes(rest);
  if (c == "huge-page-tables") return CaseHugeSavesPageTables(rest[0]);
  if (c == "fault-sigbus") return CaseFaultSigbus(rest[0]);
  if (c == "corrupted-page-table") return CaseCorruptedPageTable(rest[0]);
  if (c == "expect-refused" && argc == 6) return CaseExpectRefused(rest[0], rest[1], rest[2], rest[3]);
  if (c == "ioctl-garbage") return CaseIoctlGarbage(rest[0]);
  if (c == "mmap-bounds") return CaseMmapBounds(rest[0]);
  if (c == "concurrent") return CaseConcurrent(rest);
  if (c == "concurrent-first-touch" && (argc == 4 || (argc == 5 && rest[2] == "race"))) {
    const int rounds = std::atoi(rest[1].c_str());
    if (rounds < 1) return Fail("ROUNDS '" + rest[1] + "' is no positive number of rounds (usage: concurrent-first-touch DEV ROUNDS [race])");
    return CaseConcurrentFirstTouch(rest[0], rounds, argc == 5);
  }
  if (c == "unload-while-mapped" && argc == 4) return CaseUnloadWhileMapped(rest[0], rest[1]);
  if (c == "open-during-failed-load" && argc == 5) return CaseOpenDuringFailedLoad(rest[0], rest[1], rest[2]);
  if (c == "pipe-holds-pages" && argc == 4) return CasePipeHoldsPages(rest[0], rest[1]);
  if (c == "refs-behind-scan" && argc == 4) return CaseRefsBehindScan(rest[0], rest[1]);
  if (c == "huge-kept-per-mapping" && argc == 3) return CaseHugeKeptPerMapping(rest[0]);
  if (c == "integrity") return CaseIntegrity(rest[0]);
  if (c == "bench") return Bench(rest);
  if (c == "udev-rule" && argc == 4) return CaseUdevRule(rest[0], rest[1]);
  if (c == "open-as" && argc == 7)
    return CaseOpenAs(static_cast<uid_t>(std::strtoul(rest[0].c_str(), nullptr, 10)),
                      static_cast<gid_t>(std::strtoul(rest[1].c_str(), nullptr, 10)), rest[2],
                      rest[3], rest[4]);
  return Usage();
}

}  // namespace
}  // namespace resmem

int main(int argc, char** argv) { return resmem::Main(argc, argv); }
