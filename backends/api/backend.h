// A Backend is one Platform, one RegionProvider and one Gpu, chosen by name at run time and mixable
// (the kmod Region with the simulated Gpu, say), sharing one clock and one fault injector.
// engine/backend builds them from a name ("sim", "kmod", "host", "cuda", "fuse") or from
// "platform=...,region=...,gpu=..."; every report names the backend that ran.
#ifndef RESMEM_BACKENDS_API_BACKEND_H_
#define RESMEM_BACKENDS_API_BACKEND_H_

#include <memory>
#include <string>

#include "backends/api/card.h"
#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/api/managed.h"
#include "backends/api/p2p.h"
#include "backends/api/platform.h"
#include "backends/api/region.h"
#include "backends/fault/fault_injector.h"

namespace resmem {

struct Backend {
  std::string name;                 // "sim", "kmod+sim-gpu", ...
  std::shared_ptr<Clock> clock;
  std::shared_ptr<FaultInjector> faults;
  std::unique_ptr<Platform> platform;
  std::unique_ptr<RegionProvider> regions;
  std::unique_ptr<Gpu> gpu;         // null when this backend has no GPU side
  std::unique_ptr<GpuDirect> gpudirect;  // GPUDirect RDMA (p2p.h); null when the backend has none
  std::unique_ptr<ManagedMemory> managed;  // managed memory (managed.h); null when the backend has none
  std::unique_ptr<CardPort> card;   // a data-acquisition card (card.h); null when the backend has none
  // Members destroyed in reverse order; objects the parts share (a simulated machine) live here.
  std::shared_ptr<void> shared_state;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_BACKEND_H_
