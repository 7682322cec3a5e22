#include "mock/parity/sim_probe.h"

#include <sys/mman.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>

#include "mock/machine/machine.h"
#include "mock/parity/probe.h"
#include "mock/region/sim_driver.h"
#include "mock/region/sim_file.h"
#include "mock/sim/sim_world.h"

namespace resmem::parity {
namespace {

// A Status as the table's return value: -errno (EIO for a status that is no errno).
int NegErrno(const Status& s) {
  return -(s.space() == ErrorSpace::kErrno && s.code() > 0 ? s.code() : EIO);
}
// A load/store status as the table's peek/poke value: 0, or the signal (SIGBUS for an error).
int SignalOf(const Status& s) {
  if (s.ok()) return 0;
  return s.space() == ErrorSpace::kSignal ? s.code() : SIGBUS;
}

struct SimContext {
  std::shared_ptr<sim::SimWorld> world;
  std::unique_ptr<RegionProvider> provider;
  std::map<int, std::unique_ptr<sim::SimDeviceFile>> files;  // descriptor -> open file
  int next_fd = 3;
};

SimContext& Ctx(void* c) { return *static_cast<SimContext*>(c); }
sim::SimDeviceFile* File(void* c, int fd) {
  auto it = Ctx(c).files.find(fd);
  return it == Ctx(c).files.end() ? nullptr : it->second.get();
}

extern "C" {

static int SimOpen(void* c, const char* path, int flags) {
  auto f = sim::SimDeviceFile::Open(Ctx(c).world, *Ctx(c).provider, path, flags);
  if (!f.ok()) return NegErrno(f.status());
  const int fd = Ctx(c).next_fd++;
  Ctx(c).files[fd] = std::move(f).value();
  return fd;
}

static int SimClose(void* c, int fd) { return Ctx(c).files.erase(fd) ? 0 : -EBADF; }

static int64_t SimRead(void* c, int fd, void* buf, uint64_t count) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  auto n = f->Read(buf, count);
  return n.ok() ? static_cast<int64_t>(*n) : NegErrno(n.status());
}

static int64_t SimWrite(void* c, int fd, const void* buf, uint64_t count) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  auto n = f->Write(buf, count);
  return n.ok() ? static_cast<int64_t>(*n) : NegErrno(n.status());
}

static int64_t SimLseek(void* c, int fd, int64_t offset, int whence) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  auto r = f->Seek(offset, whence);
  return r.ok() ? *r : NegErrno(r.status());
}

static int SimFstat(void* c, int fd, probe_stat* st) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  const auto s = f->Fstat();
  st->type = s.char_device ? 'c' : 'r';
  st->size = s.size;
  return 0;
}

static int SimIoctl(void* c, int fd, unsigned long cmd, void* arg) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  Status s = f->Ioctl(cmd, arg);
  return s.ok() ? 0 : NegErrno(s);
}

static int SimMmap(void* c, int fd, uint64_t offset, uint64_t length, int prot, int flags,
                   void** map) {
  sim::SimDeviceFile* f = File(c, fd);
  if (!f) return -EBADF;
  auto m = f->Map(offset, length, (prot & PROT_WRITE) != 0, (flags & MAP_SHARED) != 0);
  if (!m.ok()) return NegErrno(m.status());
  *map = m.value().release();
  return 0;
}

static int SimMunmap(void*, void* map) {
  delete static_cast<HostMemory*>(map);
  return 0;
}

static int SimPeek(void*, void* map, uint64_t offset, void* buf, uint64_t n) {
  return SignalOf(static_cast<HostMemory*>(map)->Read(offset, buf, n));
}

static int SimPoke(void*, void* map, uint64_t offset, const void* buf, uint64_t n) {
  return SignalOf(static_cast<HostMemory*>(map)->Write(offset, buf, n));
}

}  // extern "C"

}  // namespace

Result<std::string> RunSimProbe(const SimProbeOptions& options) {
  RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec machine, sim::MachinePreset(options.preset));
  machine.cmdline += " " + options.reservation;
  SimContext ctx;
  RESMEM_ASSIGN_OR_RETURN(ctx.world, sim::MakeSimWorld(machine, options.seed));
  ctx.provider = sim::MakeSimRegionProvider(ctx.world, sim::SimDriverSpec());
  probe_ops ops{&ctx,    SimOpen,  SimClose,  SimRead,   SimWrite, SimLseek, SimFstat,
                SimIoctl, SimMmap, SimMunmap, SimPeek, SimPoke};
  char* text = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  if (!out) return Status::Errno(errno, "open_memstream for the sim transcript");
  const int rc = probe_run(&ops, options.device.c_str(), out);
  std::fclose(out);
  std::string transcript(text, len);
  std::free(text);
  if (rc != 0)
    return Status::Internal("the probe could not run on the sim device " + options.device +
                            ":\n" + transcript);
  return transcript;
}

}  // namespace resmem::parity
