#include "engine/backend/backend_factory.h"

#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

TEST(BackendFactory, ResolvesPresetsAndSpelledOutSpecs) {
  auto sim = ResolveBackendSpec("sim");
  ASSERT_TRUE(sim.ok());
  EXPECT_EQ(sim->region, "sim");
  auto kmod = ResolveBackendSpec("kmod");
  ASSERT_TRUE(kmod.ok());
  EXPECT_EQ(kmod->platform, "host");
  EXPECT_EQ(kmod->gpu, "sim");
  EXPECT_EQ(kmod->gpudirect, "kmod");  // GPUDirect RDMA through the real modules
  auto cuda = ResolveBackendSpec("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->region, "standin");
  EXPECT_EQ(cuda->gpu, "cuda");
  auto lab = ResolveBackendSpec("kmod+cuda");  // a GPU host that can load the module
  ASSERT_TRUE(lab.ok());
  EXPECT_EQ(lab->platform, "host");
  EXPECT_EQ(lab->region, "kmod");
  EXPECT_EQ(lab->gpu, "cuda");
  auto mixed = ResolveBackendSpec("platform=sim,region=sim,gpu=sim");
  ASSERT_TRUE(mixed.ok());
  EXPECT_FALSE(ResolveBackendSpec("warp").ok());
  EXPECT_NE(ResolveBackendSpec("warp").status().message().find("sim"), std::string::npos);
  EXPECT_FALSE(ResolveBackendSpec("disk=ssd").ok());
}

// "gpu=sim,gpu=cuda" ran on the last one named; a part given twice is refused, naming both.
TEST(BackendFactory, APartGivenTwiceIsRefused) {
  auto twice = ResolveBackendSpec("platform=sim,region=sim,gpu=sim,gpu=cuda");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), kInvalidArgument);
  EXPECT_NE(twice.status().message().find(
                "backend part 'gpu' is given twice (gpu=sim, then gpu=cuda); give each of "
                "platform, region and gpu once"),
            std::string::npos)
      << twice.status().message();
  EXPECT_FALSE(ResolveBackendSpec("region=sim,region=sim").ok());
  auto once = ResolveBackendSpec("gpu=cuda");
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(once->gpu, "cuda");
  EXPECT_EQ(once->platform, "sim");
}

// The keys --option may set are the ones the parts read; run refuses others by this list.
TEST(BackendFactory, PartOptionKeysAreThoseThePartsRead) {
  for (const char* key : {"card_devices", "card_mailbox", "cuda_device", "edu_devices",
                          "gpudirect", "host_region_size", "kmod_devices", "p2p_provider"})
    EXPECT_EQ(PartOptionKeys().count(key), 1u) << key;
  EXPECT_EQ(PartOptionKeys().count("platform"), 0u);  // MakeBackend sets it from the spec
}

// The kmod preset's GPUDirect part is the real one (backends/kmod/kmod_gpudirect.h): it opens
// nothing until p2p_setup, which names the module to load where its nodes are missing.
TEST(BackendFactory, KmodGpuDirectPartSaysWhatIsMissing) {
  auto spec = ResolveBackendSpec("platform=sim,region=sim,gpu=sim");
  PartContext ctx;
  ctx.machine = *sim::MachinePreset("seed000-workstation");
  ctx.options["gpudirect"] = "kmod";
  ctx.options["p2p_provider"] = "/nonexistent-resmem-dir/nv_p2p_standin";
  auto b = MakeBackend(*spec, ctx);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_NE(b->gpudirect, nullptr);
  EXPECT_EQ(b->gpudirect->name(), "kmod");
  Status st = b->gpudirect->Configure(GpuDirectConfig{});
  EXPECT_EQ(st.code(), kUnavailable);
  EXPECT_NE(st.message().find("load nv_p2p_standin.ko"), std::string::npos) << st.message();
}

TEST(BackendFactory, BuildsTheSimulatorOnAVirtualClock) {
  auto spec = ResolveBackendSpec("sim");
  PartContext ctx;
  ctx.machine = *sim::MachinePreset("seed000-workstation");
  ctx.cuda_profile = "cuda-4.1-r285";
  auto b = MakeBackend(*spec, ctx);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(b->clock->is_virtual());
  ASSERT_NE(b->gpu, nullptr);
  EXPECT_EQ(b->gpu->profile(), "cuda-4.1-r285");
  auto devices = b->regions->List();
  ASSERT_TRUE(devices.ok());
  EXPECT_FALSE(devices->empty());
}

TEST(BackendFactory, UnknownPartNamesWhatExists) {
  BackendSpec spec{"x", "sim", "teleport", "sim", ""};
  PartContext ctx;
  ctx.machine = *sim::MachinePreset("seed000-workstation");
  auto b = MakeBackend(spec, ctx);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("teleport"), std::string::npos);
}

}  // namespace
}  // namespace resmem::engine
