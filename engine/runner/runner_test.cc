// The runner above the seams: a mocked Region (GoogleMock) under the simulated GPU, so each test
// decides what the device answers and checks how the runner judges it.
#include "engine/runner/runner.h"

#include <cerrno>
#include <cstring>

#include "engine/backend/backend_factory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/scenario/scenario.h"
#include "mock/region/region_mocks.h"

namespace resmem::engine {
namespace {

using ::testing::_;
using ::testing::ByMove;
using ::testing::NiceMock;
using ::testing::Return;
using ::testing::ReturnRef;

// What the next "mock" region part hands out.
struct MockSetup {
  Status open_error;
  MappingFacts facts;
};
MockSetup g_setup;

// A HostMemory over a vector, with given facts.
class VectorMemory : public HostMemory {
 public:
  VectorMemory(uint64_t size, MappingFacts facts) : bytes_(size), facts_(facts) { facts_.length = size; }
  uint64_t size() const override { return bytes_.size(); }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(bytes_.data()); }
  uint8_t* data() override { return bytes_.data(); }
  Status Read(uint64_t o, void* out, uint64_t n) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, o, n, "read"));
    std::memcpy(out, bytes_.data() + o, n);
    return Status::Ok();
  }
  Status Write(uint64_t o, const void* in, uint64_t n) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, o, n, "write"));
    std::memcpy(bytes_.data() + o, in, n);
    return Status::Ok();
  }
  std::string Describe() const override { return "vector"; }

 private:
  std::vector<uint8_t> bytes_;
  MappingFacts facts_;
};

const bool kMockPart = RegisterRegionPart("mock", [](PartContext&) -> Result<std::unique_ptr<RegionProvider>> {
  auto provider = std::make_unique<NiceMock<MockRegionProvider>>();
  ON_CALL(*provider, Open(_)).WillByDefault([](const OpenRequest&) -> Result<std::unique_ptr<RegionHandle>> {
    if (!g_setup.open_error.ok()) return g_setup.open_error;
    auto h = std::make_unique<NiceMock<MockRegionHandle>>();
    RegionInfo info;
    info.size = 1 << 20;
    ON_CALL(*h, Info()).WillByDefault(Return(Result<RegionInfo>(info)));
    ON_CALL(*h, Map(_)).WillByDefault([](const MapRequest& r) -> Result<std::unique_ptr<HostMemory>> {
      return std::unique_ptr<HostMemory>(new VectorMemory(r.length, g_setup.facts));
    });
    return std::unique_ptr<RegionHandle>(std::move(h));
  });
  return std::unique_ptr<RegionProvider>(std::move(provider));
});

scenario::Step MakeStep(scenario::StepArgs args) {
  scenario::Step step;
  step.args = std::move(args);
  return step;
}

// A register step that must fail with cudaErrorInvalidValue, as a loaded file would have it.
scenario::Expectation ExpectInvalidValue() {
  scenario::Expectation e;
  scenario::ExpectedError err;
  err.kind = scenario::ExpectedError::Kind::kCudaName;
  err.cuda_name = "cudaErrorInvalidValue";
  e.error = scenario::Expected<scenario::ExpectedError>{err, "cudaErrorInvalidValue", 0};
  return e;
}

scenario::Scenario Make(bool expect_invalid_value, uint32_t flags = 0) {
  scenario::Scenario s;
  s.name = "t";
  s.kind = "bug";
  s.machine = *sim::MachinePreset("h100-host");
  s.cuda_profile = "cuda-13.0-r580";
  scenario::MmapStep mmap;
  mmap.as = "m";
  scenario::RegisterStep reg;
  reg.span = "m";
  reg.flags = flags;
  s.steps = {MakeStep(scenario::OpenStep{}), MakeStep(mmap), MakeStep(reg)};
  if (expect_invalid_value) s.steps[2].expect = ExpectInvalidValue();
  return s;
}

RunOptions MockBackend() {
  RunOptions o;
  o.backend = "platform=sim,region=mock,gpu=sim";
  return o;
}

TEST(Runner, JudgesTheModelsAnswerOnMockedFacts) {
  g_setup = {};
  g_setup.facts.vm_io = g_setup.facts.vm_pfnmap = true;
  g_setup.facts.backing = Backing::kDevicePfn;
  g_setup.facts.physically_contiguous = true;
  g_setup.facts.shared = true;
  auto bug = RunScenario(Make(true), MockBackend());
  EXPECT_EQ(bug.verdict, ScenarioVerdict::kReproduced) << bug.reason;
  EXPECT_NE(bug.steps[2].observed.find("cudaErrorInvalidValue"), std::string::npos);

  auto fixed = RunScenario(Make(false, kRegisterIoMemory), MockBackend());
  EXPECT_EQ(fixed.verdict, ScenarioVerdict::kReproduced) << fixed.reason;  // kind bug, all held
}

TEST(Runner, AFailedExpectationSaysWhatAndGivesTheSeed) {
  g_setup = {};
  g_setup.facts.backing = Backing::kAnonymous;  // registers fine: the expectation of an error fails
  auto r = RunScenario(Make(true), MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("expected error cudaErrorInvalidValue, the step succeeded"), std::string::npos) << r.reason;
  EXPECT_EQ(r.steps[2].verdict, StepVerdict::kFail);
}

TEST(Runner, UnexpectedErrorStopsTheRestAndSkipsAreReported) {
  g_setup = {};
  g_setup.open_error = Status::Errno(ENXIO, "no device");
  auto s = Make(false);
  s.steps[1].on["platform=sim,region=mock,gpu=sim"].skip = "not here";
  auto r = RunScenario(s, MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_EQ(r.steps[0].verdict, StepVerdict::kFail);
  EXPECT_EQ(r.steps[1].verdict, StepVerdict::kSkipped);
  EXPECT_EQ(r.steps[1].note, "not here");
  EXPECT_EQ(r.steps[2].verdict, StepVerdict::kNotRun);
}

TEST(Runner, NotApplicableAndUnknownBackends) {
  auto s = Make(false);
  s.not_applicable["cuda"] = "no module there";
  RunOptions o;
  o.backend = "cuda";
  auto r = RunScenario(s, o);
  EXPECT_EQ(r.verdict, ScenarioVerdict::kNotApplicable);
  EXPECT_EQ(r.reason, "no module there");
  o.backend = "warp";
  EXPECT_EQ(RunScenario(s, o).verdict, ScenarioVerdict::kError);
}

// [step.on.BACKEND] arguments replace the step's own on that backend only.
TEST(Runner, BackendArgumentsReplaceTheStepsOwn) {
  g_setup = {};
  g_setup.facts.backing = Backing::kAnonymous;  // registers fine
  auto s = Make(false);
  std::get<scenario::MmapStep>(s.steps[1].args).length = 64 << 10;
  scenario::VerifyStep verify;
  verify.span = "m";
  verify.length = 8 << 10;  // inside a 64K mapping, past a 4K one
  s.steps.push_back(MakeStep(verify));
  auto own = RunScenario(s, MockBackend());
  EXPECT_EQ(own.verdict, ScenarioVerdict::kReproduced) << own.reason;

  scenario::MmapStep four_k = std::get<scenario::MmapStep>(s.steps[1].args);
  four_k.length = 4 << 10;
  s.steps[1].on["platform=sim,region=mock,gpu=sim"].args = four_k;
  auto overridden = RunScenario(s, MockBackend());
  EXPECT_EQ(overridden.verdict, ScenarioVerdict::kFailed);
  EXPECT_EQ(overridden.steps[3].verdict, StepVerdict::kFail) << overridden.reason;

  s.steps[1].on.clear();
  s.steps[1].on["cuda"].args = four_k;  // another backend's override changes nothing
  EXPECT_EQ(RunScenario(s, MockBackend()).verdict, ScenarioVerdict::kReproduced);
}

// `passes` measures several times and reports the median, and says how many; the loader refuses
// a count the runner could not take the median of.
TEST(Runner, PassesTakeTheMedian) {
  constexpr char kText[] = R"(
[scenario]
name = "passes"
[machine]
preset = "h100-host"
[[step]]
do = "alloc_pinned"
as = "p"
length = "16M"
[[step]]
do = "alloc_device"
as = "d"
length = "16M"
[[step]]
do = "copy"
direction = "h2d"
host = "p"
device = "d"
length = "16M"
passes = 5
)";
  auto loaded = scenario::ParseScenarioText(kText, "passes.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  RunOptions o;
  auto r = RunScenario((*loaded)[0], o);
  ASSERT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  EXPECT_EQ(r.steps[2].numbers["passes"], 5);
  EXPECT_GT(r.steps[2].numbers["mbps"], 40000);  // the model's pinned link, 53.8 GB/s
  std::string zero = kText;
  zero.replace(zero.find("passes = 5"), 10, "passes = 0");
  auto refused = scenario::ParseScenarioText(zero, "passes.toml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("passes.toml:20: key 'step.passes': 0 is out of range: give 1 to 1000"),
            std::string::npos) << refused.status().message();
}

// The overlap step reports its median pass: the ratio and the path the backend read from that
// same pass. A GPU part around the simulator's answers each pass of CopyKernelPipeline in turn
// with 0.95 "serial", 0.97 "serial" and 0.50 "overlapped": the median pass is the first, so the
// step reads "serial (1 stream)" at 0.95, though the last pass read "overlapped".
class PassVaryingGpu : public Gpu {
 public:
  explicit PassVaryingGpu(std::unique_ptr<Gpu> inner) : in_(std::move(inner)) {}
  std::string name() const override { return in_->name(); }
  std::string profile() const override { return in_->profile(); }
  Result<int> DeviceCount() override { return in_->DeviceCount(); }
  Result<DeviceAttributes> Attributes(int d) override { return in_->Attributes(d); }
  Result<int> CreateContext(int d) override { return in_->CreateContext(d); }
  Status UseContext(int c) override { return in_->UseContext(c); }
  int current_context() const override { return in_->current_context(); }
  Status Register(HostMemory& m, uint64_t o, uint64_t n, uint32_t f) override {
    return in_->Register(m, o, n, f);
  }
  Status Unregister(HostMemory& m, uint64_t o) override { return in_->Unregister(m, o); }
  Result<std::unique_ptr<HostMemory>> AllocPinned(uint64_t n, uint32_t f) override {
    return in_->AllocPinned(n, f);
  }
  Result<std::unique_ptr<DeviceBuffer>> AllocDevice(uint64_t n) override {
    return in_->AllocDevice(n);
  }
  Result<CopyStats> Copy(CopyDirection d, HostMemory& h, uint64_t ho, DeviceBuffer& b,
                         uint64_t bo, uint64_t n) override {
    return in_->Copy(d, h, ho, b, bo, n);
  }
  Result<uint64_t> DeviceChecksum(DeviceBuffer& b, uint64_t o, uint64_t n) override {
    return in_->DeviceChecksum(b, o, n);
  }
  Result<PipelineStats> CopyKernelPipeline(HostMemory& h, DeviceBuffer& b,
                                           const PipelineSpec& spec) override {
    auto st = in_->CopyKernelPipeline(h, b, spec);
    if (!st.ok()) return st;
    static constexpr double kRatios[] = {0.95, 0.97, 0.50};
    const double ratio = kRatios[pass_++ % 3];
    st->ratio_to_serial = ratio;
    st->path = ratio < 0.9 ? "overlapped (1 stream)" : "serial (1 stream)";
    return st;
  }

 private:
  std::unique_ptr<Gpu> in_;
  int pass_ = 0;
};

const bool kPassVaryingPart = RegisterGpuPart("pass-varying", [](PartContext& ctx) -> Result<std::unique_ptr<Gpu>> {
  auto spec = ResolveBackendSpec("platform=sim,region=sim,gpu=sim");
  if (!spec.ok()) return spec.status();
  auto inner = MakeBackend(*spec, ctx);
  if (!inner.ok()) return inner.status();
  return std::unique_ptr<Gpu>(std::make_unique<PassVaryingGpu>(std::move(inner->gpu)));
});

// card_run prints both sides of out-of-order completions: the card's count of held completions
// and the driver's of slots it read before their DONE flag; a driver that checks DONE reads none.
TEST(Runner, CardRunPrintsOutOfOrderFromTheCardAndTheDriver) {
  for (bool check_done : {false, true}) {
    const std::string text = std::string(R"(
[scenario]
name = "ooo"
kind = "check"
[machine]
preset = "qemu-q35-5g"
cmdline = "console=ttyS0 memmap=64M$0x40000000"
[[step]]
do = "card_start"
block = "1M"
ring = 16
rate = "100M"
poll_seconds = 0.00001
faults = "out_of_order at 0.1s for 0.3s"
check_done = )") + (check_done ? "true" : "false") + R"(
[[step]]
do = "card_run"
seconds = 0.5
)";
    auto loaded = scenario::ParseScenarioText(text, "ooo.toml");
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    auto r = RunScenario((*loaded)[0], RunOptions{});
    ASSERT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
    EXPECT_GT(r.steps[1].numbers.at("out_of_order"), 0) << check_done;
    if (check_done) EXPECT_EQ(r.steps[1].numbers.at("not_done"), 0);
    else EXPECT_GT(r.steps[1].numbers.at("not_done"), 0);
  }
}

TEST(Runner, OverlapReportsTheMedianPassPathBesideItsRatio) {
  constexpr char kText[] = R"toml(
[scenario]
name = "overlap-median"

[machine]
preset = "h100-host"

[[step]]
do = "alloc_pinned"
as = "p"
length = "32M"

[[step]]
do = "alloc_device"
as = "d"
length = "32M"

[[step]]
do = "overlap"
host = "p"
device = "d"
block_size = "16M"
blocks = 4
streams = 1
kernel_us = 312
passes = 3
expect = { path = "serial (1 stream)", ratio_to_serial = 0.95, tolerance = 0.02 }
)toml";
  auto loaded = scenario::ParseScenarioText(kText, "overlap-median.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  RunOptions o;
  o.backend = "platform=sim,region=sim,gpu=pass-varying";
  auto r = RunScenario((*loaded)[0], o);
  ASSERT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  EXPECT_EQ(r.steps[2].texts["path"], "serial (1 stream)");
  EXPECT_DOUBLE_EQ(r.steps[2].numbers["ratio_to_serial"], 0.95);
}

// A [step.on.BACKEND] with other arguments, loaded from a file, runs with them on that backend.
TEST(Runner, LoadedBackendArgumentsRunThere) {
  g_setup = {};
  g_setup.facts.backing = Backing::kAnonymous;
  constexpr char kText[] = R"(
[scenario]
name = "per-backend"
kind = "check"
[machine]
preset = "h100-host"
[[step]]
do = "open"
[[step]]
do = "mmap"
as = "m"
length = "64K"
[step.on."platform=sim,region=mock,gpu=sim"]
length = "4K"
[[step]]
do = "verify"
span = "m"
length = "8K"
expect = { ok = false, message_contains = "is outside the 4 KiB" }
[step.on.cuda]               # another backend's: not this run's
expect = { data = "intact" }
)";
  auto loaded = scenario::ParseScenarioText(kText, "per.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto r = RunScenario((*loaded)[0], MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;  // 8K past a 4K mapping
  EXPECT_EQ(r.steps[2].expected, "message_contains=is outside the 4 KiB, ok=false");
}

// On the simulator a registration's headline gives the model's time (mock/gpu RegisterSeconds:
// untouched 4 KiB pages at the host's 3.2 GB/s), so a scenario says how long start-up takes.
TEST(Runner, RegisterHeadlineGivesTheModelledTime) {
  g_setup = {};
  g_setup.facts.backing = Backing::kAnonymous;
  constexpr char kText[] = R"(
[scenario]
name = "register-time"
kind = "check"
[machine]
preset = "h100-host"
[[step]]
do = "open"
[[step]]
do = "mmap"
as = "m"
length = "64M"
[[step]]
do = "register"
span = "m"
expect = { ok = true }
)";
  auto loaded = scenario::ParseScenarioText(kText, "reg.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto r = RunScenario((*loaded)[0], MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  // 64 MiB / 3.2 GB/s = 0.021 s.
  EXPECT_NE(r.headline.find("register: ok in 0.021 s (modelled)"), std::string::npos) << r.headline;
}

}  // namespace
}  // namespace resmem::engine
