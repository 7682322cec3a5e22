// Builds a Backend by name at run time. A backend is three parts: a Platform, a RegionProvider and
// a Gpu, each chosen by name from a registry that backend libraries fill (sim parts here; kmod,
// fuse, host and cuda parts in their own libraries, linked with alwayslink). Presets:
//   sim   platform=sim  region=sim   gpu=sim    (the default; runs anywhere)
//   kmod  platform=host region=kmod  gpu=sim    (the real module; the CUDA model judges its mappings;
//         GPUDirect RDMA through the real modules, gpudirect=kmod: backends/kmod/kmod_gpudirect.h)
//   fuse  platform=sim  region=fuse  gpu=sim    (the sim device served through a real FUSE mount)
//   host  platform=host region=memfd gpu=sim    (host stand-ins for reserved memory)
//   cuda  platform=host region=standin gpu=cuda (the real GPU; the scenario's devices stood in
//         for by host memory: [vvar] for pfnmap, memfd, MAP_NORESERVE past MemTotal)
//   kmod+cuda platform=host region=kmod gpu=cuda (the real module and the real GPU, for a GPU
//         host that can load the module; docs/hil/README.md)
// or spelled out: "platform=host,region=kmod,gpu=sim".
#ifndef RESMEM_ENGINE_BACKEND_BACKEND_FACTORY_H_
#define RESMEM_ENGINE_BACKEND_BACKEND_FACTORY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"

namespace resmem::engine {

// What the parts are built from: the scenario's machine, driver and CUDA profile, and the seed.
struct PartContext {
  sim::MachineSpec machine;
  sim::SimDriverSpec driver;
  std::string cuda_profile = "cuda-13.0-r580";
  int gpu_count = 1;
  uint64_t seed = 1;
  std::map<std::string, std::string> options;  // --option key=value, for parts that need them
  std::shared_ptr<Clock> clock;
  std::shared_ptr<FaultInjector> faults;
  // Objects a part must keep alive (a FUSE mount, a simulated world); the Backend holds them.
  std::vector<std::shared_ptr<void>> keep_alive;

  // The simulated world of `machine`, booted on first use and shared by every sim part.
  Result<std::shared_ptr<sim::SimWorld>> World();

 private:
  std::shared_ptr<sim::SimWorld> world_;
};

using PlatformFactory = std::function<Result<std::unique_ptr<Platform>>(PartContext&)>;
using RegionFactory = std::function<Result<std::unique_ptr<RegionProvider>>(PartContext&)>;
using GpuFactory = std::function<Result<std::unique_ptr<Gpu>>(PartContext&)>;
using GpuDirectFactory = std::function<Result<std::unique_ptr<GpuDirect>>(PartContext&)>;
using ManagedFactory = std::function<Result<std::unique_ptr<ManagedMemory>>(PartContext&)>;
using CardFactory = std::function<Result<std::unique_ptr<CardPort>>(PartContext&)>;

bool RegisterPlatformPart(const std::string& name, PlatformFactory f);
bool RegisterRegionPart(const std::string& name, RegionFactory f);
bool RegisterGpuPart(const std::string& name, GpuFactory f);
// The GPUDirect RDMA path (backends/api/p2p.h) that goes with a gpu part of the same name, or the
// one `--option gpudirect=NAME` names; a backend whose GPU has none gets a null gpudirect.
bool RegisterGpuDirectPart(const std::string& name, GpuDirectFactory f);
// Managed memory (backends/api/managed.h) that goes with a gpu part of the same name; a backend
// whose GPU has none gets a null managed.
bool RegisterManagedPart(const std::string& name, ManagedFactory f);
// The data-acquisition card (backends/api/card.h) that goes with a region part of the same name:
// the card writes into that part's reserved memory. A backend whose region has none gets a null card.
bool RegisterCardPart(const std::string& name, CardFactory f);

struct BackendSpec {
  std::string name;  // as the user wrote it
  std::string platform, region, gpu;
  std::string gpudirect;  // the GPUDirect part a preset names; "": the gpu part's
};
// Resolves a preset name or "platform=..,region=..,gpu=..". Unknown names, and a part given twice
// (gpu=sim,gpu=cuda) -> InvalidArgument listing what exists.
Result<BackendSpec> ResolveBackendSpec(const std::string& text);
// The keys the parts read from PartContext::options (`resmem run --option KEY=VALUE`), each with
// what it sets. Any other key reaches no part: run refuses it, listing these.
const std::map<std::string, std::string>& PartOptionKeys();
std::vector<std::string> BackendPresetNames();
std::vector<std::string> RegisteredParts(const std::string& kind);  // "platform", "region", "gpu"

// Builds the backend. The clock is virtual when the GPU is simulated (modelled costs), steady
// otherwise. Unavailable parts (no module loaded, no GPU) fail with kUnavailable.
Result<Backend> MakeBackend(const BackendSpec& spec, PartContext& context);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_BACKEND_BACKEND_FACTORY_H_
