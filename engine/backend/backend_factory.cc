#include "engine/backend/backend_factory.h"

#include <sstream>

namespace resmem::engine {
namespace {

template <typename F>
std::map<std::string, F>& Registry() {
  static std::map<std::string, F> registry;
  return registry;
}

struct Preset {
  const char* name;
  const char* platform;
  const char* region;
  const char* gpu;
  const char* gpudirect;  // "": the gpu part's
};
constexpr Preset kPresets[] = {
    {"sim", "sim", "sim", "sim", ""},     {"kmod", "host", "kmod", "sim", "kmod"},
    {"fuse", "sim", "fuse", "sim", ""},   {"host", "host", "memfd", "sim", ""},
    {"cuda", "host", "standin", "cuda", ""}, {"kmod+cuda", "host", "kmod", "cuda", ""},
};

template <typename F>
std::string Names() {
  std::string out;
  for (const auto& [k, v] : Registry<F>()) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "(none linked)" : out;
}

}  // namespace

Result<std::shared_ptr<sim::SimWorld>> PartContext::World() {
  if (world_) return world_;
  auto w = sim::MakeSimWorld(machine, seed);
  if (!w.ok()) return w.status();
  world_ = *w;
  // The world runs on the backend's clock and fault injector.
  if (clock) {
    if (auto vc = std::dynamic_pointer_cast<VirtualClock>(clock)) world_->clock = vc;
  }
  if (faults) world_->faults = faults;
  keep_alive.push_back(world_);
  return world_;
}

bool RegisterPlatformPart(const std::string& name, PlatformFactory f) {
  Registry<PlatformFactory>()[name] = std::move(f);
  return true;
}
bool RegisterRegionPart(const std::string& name, RegionFactory f) {
  Registry<RegionFactory>()[name] = std::move(f);
  return true;
}
bool RegisterGpuPart(const std::string& name, GpuFactory f) {
  Registry<GpuFactory>()[name] = std::move(f);
  return true;
}
bool RegisterManagedPart(const std::string& name, ManagedFactory f) {
  Registry<ManagedFactory>()[name] = std::move(f);
  return true;
}

bool RegisterCardPart(const std::string& name, CardFactory f) {
  Registry<CardFactory>()[name] = std::move(f);
  return true;
}

bool RegisterGpuDirectPart(const std::string& name, GpuDirectFactory f) {
  Registry<GpuDirectFactory>()[name] = std::move(f);
  return true;
}

std::vector<std::string> BackendPresetNames() {
  std::vector<std::string> out;
  for (const auto& p : kPresets) out.push_back(p.name);
  return out;
}

std::vector<std::string> RegisteredParts(const std::string& kind) {
  std::vector<std::string> out;
  if (kind == "platform")
    for (const auto& [k, v] : Registry<PlatformFactory>()) out.push_back(k);
  if (kind == "region")
    for (const auto& [k, v] : Registry<RegionFactory>()) out.push_back(k);
  if (kind == "gpu")
    for (const auto& [k, v] : Registry<GpuFactory>()) out.push_back(k);
  return out;
}

Result<BackendSpec> ResolveBackendSpec(const std::string& text) {
  BackendSpec spec;
  spec.name = text;
  for (const auto& p : kPresets) {
    if (text == p.name) {
      spec.platform = p.platform;
      spec.region = p.region;
      spec.gpu = p.gpu;
      spec.gpudirect = p.gpudirect;
      return spec;
    }
  }
  if (text.find('=') == std::string::npos) {
    std::string presets;
    for (const auto& p : kPresets) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
    return Status::InvalidArgument("unknown backend '" + text + "'; use one of " + presets +
                                   " or platform=P,region=R,gpu=G");
  }
  spec.platform = "sim";
  spec.region = "sim";
  spec.gpu = "sim";
  std::map<std::string, std::string*> parts = {
      {"platform", &spec.platform}, {"region", &spec.region}, {"gpu", &spec.gpu}};
  std::map<std::string, std::string> given;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return Status::InvalidArgument("backend part '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!parts.count(key))
      return Status::InvalidArgument("backend part '" + key + "' is not platform, region or gpu");
    if (given.count(key))
      return Status::InvalidArgument("backend part '" + key + "' is given twice (" + key + "=" +
                                     given[key] + ", then " + key + "=" + value +
                                     "); give each of platform, region and gpu once");
    given[key] = value;
    *parts[key] = value;
  }
  return spec;
}

const std::map<std::string, std::string>& PartOptionKeys() {
  static const std::map<std::string, std::string> keys = {
      {"card_devices", "the kmod card's devices, a glob (default /dev/resmem[0-9]*)"},
      {"card_mailbox", "the kmod card's mailbox bus address (default 0x800 into the window)"},
      {"cuda_device", "the CUDA device of the cuda gpu and its managed memory (default 0)"},
      {"edu_devices", "the kmod GPUDirect part's resmem_edu devices, a glob"},
      {"gpudirect", "the GPUDirect RDMA part (default: the gpu part's, or the preset's)"},
      {"host_region_size", "each host-memory region part's size (default 1G)"},
      {"kmod_devices", "the kmod region's devices, a glob (default /dev/resmem*)"},
      {"p2p_provider", "the kmod GPUDirect part's provider node"},
  };
  return keys;
}

Result<Backend> MakeBackend(const BackendSpec& spec, PartContext& ctx) {
  auto& platforms = Registry<PlatformFactory>();
  auto& regions = Registry<RegionFactory>();
  auto& gpus = Registry<GpuFactory>();
  if (!platforms.count(spec.platform))
    return Status::InvalidArgument("no platform part '" + spec.platform + "' in this build; have: " +
                                   Names<PlatformFactory>());
  if (!regions.count(spec.region))
    return Status::InvalidArgument("no region part '" + spec.region + "' in this build; have: " +
                                   Names<RegionFactory>());
  if (!gpus.count(spec.gpu))
    return Status::InvalidArgument("no gpu part '" + spec.gpu + "' in this build; have: " +
                                   Names<GpuFactory>());
  Backend b;
  b.name = spec.name;
  ctx.options["platform"] = spec.platform;  // parts may adapt to their neighbours
  ctx.options["region"] = spec.region;
  ctx.options["gpu"] = spec.gpu;
  if (!ctx.clock) {
    if (spec.gpu == "sim") ctx.clock = std::make_shared<VirtualClock>();
    else ctx.clock = std::make_shared<SteadyClock>();
  }
  if (!ctx.faults) ctx.faults = std::make_shared<FaultInjector>(ctx.seed);
  b.clock = ctx.clock;
  b.faults = ctx.faults;
  auto platform = platforms[spec.platform](ctx);
  if (!platform.ok()) return platform.status().WithContext("platform '" + spec.platform + "'");
  auto region = regions[spec.region](ctx);
  if (!region.ok()) return region.status().WithContext("region '" + spec.region + "'");
  auto gpu = gpus[spec.gpu](ctx);
  if (!gpu.ok()) return gpu.status().WithContext("gpu '" + spec.gpu + "'");
  b.platform = std::move(platform).value();
  b.regions = std::move(region).value();
  b.gpu = std::move(gpu).value();
  const std::string gpudirect = ctx.options.count("gpudirect") ? ctx.options.at("gpudirect")
                                : !spec.gpudirect.empty()     ? spec.gpudirect
                                                              : spec.gpu;
  auto& gpudirects = Registry<GpuDirectFactory>();
  if (gpudirects.count(gpudirect)) {
    auto gd = gpudirects[gpudirect](ctx);
    if (!gd.ok()) return gd.status().WithContext("gpudirect '" + gpudirect + "'");
    b.gpudirect = std::move(gd).value();
  } else if (ctx.options.count("gpudirect")) {
    return Status::InvalidArgument("no gpudirect part '" + gpudirect + "' in this build; have: " +
                                   Names<GpuDirectFactory>());
  }
  if (auto& managed = Registry<ManagedFactory>(); managed.count(spec.gpu)) {
    auto m = managed[spec.gpu](ctx);
    if (!m.ok()) return m.status().WithContext("managed memory of gpu '" + spec.gpu + "'");
    b.managed = std::move(m).value();
  }
  if (auto& cards = Registry<CardFactory>(); cards.count(spec.region)) {
    auto c = cards[spec.region](ctx);
    if (!c.ok()) return c.status().WithContext("card of region '" + spec.region + "'");
    b.card = std::move(c).value();
  }
  auto keep = std::make_shared<std::vector<std::shared_ptr<void>>>(ctx.keep_alive);
  b.shared_state = keep;
  return b;
}

}  // namespace resmem::engine
