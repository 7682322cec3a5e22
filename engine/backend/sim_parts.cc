// The simulator's parts: platform=sim, region=sim, gpu=sim (and its gpudirect), over one simulated world.
#include "engine/backend/backend_factory.h"
#include "mock/gpu/sim_gpu.h"
#include "mock/gpu/sim_managed.h"
#include "mock/rdma/sim_gpudirect.h"
#include "backends/card/card_port.h"
#include "mock/sim/physical_bus.h"

namespace resmem::engine {
namespace {

const bool kSimPlatform = RegisterPlatformPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<Platform>> {
  auto world = ctx.World();
  if (!world.ok()) return world.status();
  return sim::MakeSimPlatform(*world);
});

const bool kSimRegion = RegisterRegionPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<RegionProvider>> {
  auto world = ctx.World();
  if (!world.ok()) return world.status();
  return sim::MakeSimRegionProvider(*world, ctx.driver);
});

// The CUDA model, in the scenario's profile. Its host memory speeds are the simulated machine's
// when the platform is simulated; with a real platform they are the profile's default host.
const bool kSimGpu = RegisterGpuPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<Gpu>> {
  auto profile = sim::CudaProfileByName(ctx.cuda_profile);
  if (!profile.ok()) return profile.status();
  sim::SimGpuOptions options;
  options.device_count = ctx.gpu_count;
  sim::HostPerf host = profile->default_host;
  uint64_t mem_total = 0;
  if (ctx.options.count("platform") == 0 || ctx.options.at("platform") == "sim") {
    auto world = ctx.World();
    if (!world.ok()) return world.status();
    host = (*world)->spec.perf;
    mem_total = (*world)->kernel.mem_total;
    *profile = sim::ProfileOnMachine(*profile, (*world)->spec.gpu_pci);  // its link and NUMA node
  }
  options.host_mem_total = mem_total;
  return sim::MakeSimGpu(*profile, host, ctx.clock, ctx.faults, options);
});

// GPUDirect RDMA on the simulator (mock/rdma): NVIDIA's P2P API, the device and its driver, on the
// backend's clock.
const bool kSimGpuDirect = RegisterGpuDirectPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<GpuDirect>> {
  return std::unique_ptr<GpuDirect>(std::make_unique<sim::SimGpuDirect>(ctx.clock, ctx.seed));
});

// Managed memory on the simulator (mock/gpu/sim_managed): the CUDA profile's link and GPU memory,
// on the backend's clock.
const bool kSimManaged = RegisterManagedPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<ManagedMemory>> {
  auto profile = sim::CudaProfileByName(ctx.cuda_profile);
  if (!profile.ok()) return profile.status();
  return sim::MakeSimManaged(*profile, sim::ManagedModelFor(*profile), ctx.clock);
});

// The card on the simulator: its engine and the driver on the world's virtual clock, writing into
// the machine's reserved ranges (mock/sim/physical_bus.h).
const bool kSimCard = RegisterCardPart("sim", [](PartContext& ctx) -> Result<std::unique_ptr<CardPort>> {
  RESMEM_ASSIGN_OR_RETURN(auto world, ctx.World());
  return sim::MakeSimCard(world, ctx.clock);
});

}  // namespace
}  // namespace resmem::engine
