// The parts that stand on real devices other than the kernel module:
//   region=fuse    the scenario's simulated device served through a real FUSE mount (mock/fuse),
//                  opened and mapped by the fuse Region backend like /dev/resmemN
//   region=standin the scenario's devices over host stand-ins chosen per mapping (the cuda preset)
//   region=memfd|hugetlb|shm|file|file-private|anon
//                  host memory of one kind standing in for the reserved range
//   gpu=cuda       the CUDA runtime on a real GPU
#include <cstdlib>

#include "backends/cuda/cuda_gpu.h"
#include "backends/cuda/cuda_managed.h"
#include "backends/fuse/fuse_region.h"
#include "backends/card/card_port.h"
#include "backends/host/host_region.h"
#include "engine/backend/backend_factory.h"
#include "mock/fuse/fuse_device.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/physical_bus.h"

namespace resmem::engine {
namespace {

// Mounts the scenario's simulated device and hands out the fuse Region over the mount. The mount
// (a daemon in its own mount namespace) lives as long as the backend.
const bool kFuseRegion = RegisterRegionPart("fuse", [](PartContext& ctx) -> Result<std::unique_ptr<RegionProvider>> {
  auto world = ctx.World();
  if (!world.ok()) return world.status();
  auto sim = std::shared_ptr<RegionProvider>(sim::MakeSimRegionProvider(*world, ctx.driver));
  // No device to serve (no reservation, or the driver refused them all): nothing to mount; the
  // simulated driver answers Open() with its refusal, as the missing /dev node would.
  if (auto list = sim->List(); !list.ok() || list->empty())
    return std::unique_ptr<RegionProvider>(sim::MakeSimRegionProvider(*world, ctx.driver));
  auto device = fuse_emu::FuseDevice::Mount(*sim);
  if (!device.ok()) return device.status();
  std::shared_ptr<fuse_emu::FuseDevice> mounted(std::move(device).value());
  ctx.keep_alive.push_back(sim);
  ctx.keep_alive.push_back(mounted);
  return MakeFuseRegionProvider(mounted->mount_dir());
});

// The scenario's devices (the simulated driver decides names, sizes, modes and refusals) over
// host memory that stands in for the reserved range on a machine that loads no module
// (backends/host MakeStandinRegionProvider: [vvar] for pfnmap mappings that fit in it, memfd,
// anonymous MAP_NORESERVE beyond MemTotal). The region of the cuda backend.
const bool kStandinRegion = RegisterRegionPart("standin", [](PartContext& ctx) -> Result<std::unique_ptr<RegionProvider>> {
  auto world = ctx.World();
  if (!world.ok()) return world.status();
  return host::MakeStandinRegionProvider(
      std::shared_ptr<RegionProvider>(sim::MakeSimRegionProvider(*world, ctx.driver)));
});

// One host kind as the whole region: Open() with no path opens that kind's device.
class HostKindProvider : public RegionProvider {
 public:
  HostKindProvider(host::HostKind kind, uint64_t size) : kind_(kind), inner_(size) {}
  std::string name() const override { return std::string("host:") + host::HostKindName(kind_); }
  Result<std::vector<std::string>> List() override { return std::vector<std::string>{name()}; }
  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    OpenRequest r = request;
    if (r.path.empty() || r.path.rfind("/dev/resmem", 0) == 0) r.path = name();
    return inner_.Open(r);
  }

 private:
  host::HostKind kind_;
  host::HostRegionProvider inner_;
};

bool RegisterHostKinds() {
  for (host::HostKind kind : host::AllHostKinds()) {
    RegisterRegionPart(host::HostKindName(kind), [kind](PartContext& ctx) -> Result<std::unique_ptr<RegionProvider>> {
      uint64_t size = 1ull << 30;
      if (ctx.options.count("host_region_size")) {
        auto s = ParseSize(ctx.options.at("host_region_size"));
        if (!s.ok()) return s.status().WithContext("--option host_region_size");
        size = *s;
      }
      return std::unique_ptr<RegionProvider>(new HostKindProvider(kind, size));
    });
  }
  return true;
}
const bool kHostKinds = RegisterHostKinds();

// The card over the FUSE backend: the simulated world's memory, as the simulator's card (the mount
// serves that same memory).
const bool kFuseCard = RegisterCardPart("fuse", [](PartContext& ctx) -> Result<std::unique_ptr<CardPort>> {
  RESMEM_ASSIGN_OR_RETURN(auto world, ctx.World());
  return sim::MakeSimCard(world, ctx.clock);
});

// The card on a machine that loads no module (the GPU machine): its engine a thread on the steady
// clock, writing into a memfd that stands in for the scenario's first reserved range (at most
// 1 GiB of it), at the range's physical addresses.
class MemfdCardBus : public card::SpanBus {
 public:
  MemfdCardBus(std::unique_ptr<HostMemory> mem, uint64_t base)
      : card::SpanBus(mem->data(), base, mem->size()), mem_(std::move(mem)) {}

 private:
  std::unique_ptr<HostMemory> mem_;
};

const bool kStandinCard = RegisterCardPart("standin", [](PartContext& ctx) -> Result<std::unique_ptr<CardPort>> {
  RESMEM_ASSIGN_OR_RETURN(auto world, ctx.World());
  if (world->kernel.reservations.empty())
    return std::unique_ptr<CardPort>(std::make_unique<card::BusCardPort>(
        nullptr, ctx.clock, std::vector<std::pair<uint64_t, uint64_t>>{}, true));
  const auto& r = world->kernel.reservations[0];
  const uint64_t size = std::min<uint64_t>(r.end - r.start, 1ull << 30);
  host::HostMapOptions mo;
  mo.populate = true;
  RESMEM_ASSIGN_OR_RETURN(auto mem, host::MapHostMemory(host::HostKind::kMemfd, size, mo));
  return std::unique_ptr<CardPort>(std::make_unique<card::BusCardPort>(
      std::make_unique<MemfdCardBus>(std::move(mem), r.start), ctx.clock,
      std::vector<std::pair<uint64_t, uint64_t>>{{r.start, r.start + size}}, /*with_engine=*/true));
});

const bool kCudaGpu = RegisterGpuPart("cuda", [](PartContext& ctx) -> Result<std::unique_ptr<Gpu>> {
  int device = 0;
  if (ctx.options.count("cuda_device")) device = std::atoi(ctx.options.at("cuda_device").c_str());
  auto gpu = cuda::CudaGpu::Create(device);
  if (!gpu.ok()) return gpu.status();
  (*gpu)->set_faults(ctx.faults);  // the scenario's fault points fire inside the real backend too
  return std::unique_ptr<Gpu>(std::move(gpu).value());
});

// Managed memory on the real GPU (backends/cuda/cuda_managed), on the same device.
const bool kCudaManaged = RegisterManagedPart("cuda", [](PartContext& ctx) -> Result<std::unique_ptr<ManagedMemory>> {
  int device = 0;
  if (ctx.options.count("cuda_device")) device = std::atoi(ctx.options.at("cuda_device").c_str());
  auto m = cuda::CudaManaged::Create(device);
  if (!m.ok()) return m.status();
  return std::unique_ptr<ManagedMemory>(std::move(m).value());
});

}  // namespace
}  // namespace resmem::engine
