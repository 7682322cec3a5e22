// The runner above the seams: a mocked Region (GoogleMock) under the simulated GPU, so each test
// decides what the device answers and checks how the runner judges it.
#include "engine/runner/runner.h"

#include <cerrno>
#include <cstring>

#include "engine/backend/backend_factory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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

scenario::Scenario Make(const std::string& expect_error, const std::string& flags = "") {
  scenario::Scenario s;
  s.name = "t";
  s.kind = "bug";
  s.machine = *sim::MachinePreset("h100-host");
  s.cuda_profile = "cuda-13.0-r580";
  scenario::Step open{"open"};
  scenario::Step mmap{"mmap"};
  mmap.args["as"].str = "m";
  scenario::Step reg{"register"};
  reg.args["span"].str = "m";
  if (!flags.empty()) {
    reg.args["flags"].kind = scenario::Value::Kind::kList;
    reg.args["flags"].list = {flags};
  }
  if (!expect_error.empty()) reg.expect.fields["error"].str = expect_error;
  s.steps = {open, mmap, reg};
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
  auto bug = RunScenario(Make("cudaErrorInvalidValue"), MockBackend());
  EXPECT_EQ(bug.verdict, ScenarioVerdict::kReproduced) << bug.reason;
  EXPECT_NE(bug.steps[2].observed.find("cudaErrorInvalidValue"), std::string::npos);

  auto fixed = RunScenario(Make("", "iomemory"), MockBackend());
  EXPECT_EQ(fixed.verdict, ScenarioVerdict::kReproduced) << fixed.reason;  // kind bug, all held
}

TEST(Runner, AFailedExpectationSaysWhatAndGivesTheSeed) {
  g_setup = {};
  g_setup.facts.backing = Backing::kAnonymous;  // registers fine: the expectation of an error fails
  auto r = RunScenario(Make("cudaErrorInvalidValue"), MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("expected error cudaErrorInvalidValue, the step succeeded"), std::string::npos) << r.reason;
  EXPECT_EQ(r.steps[2].verdict, StepVerdict::kFail);
}

TEST(Runner, UnexpectedErrorStopsTheRestAndSkipsAreReported) {
  g_setup = {};
  g_setup.open_error = Status::Errno(ENXIO, "no device");
  auto s = Make("");
  s.steps[1].on["platform=sim,region=mock,gpu=sim"].skip = "not here";
  auto r = RunScenario(s, MockBackend());
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_EQ(r.steps[0].verdict, StepVerdict::kFail);
  EXPECT_EQ(r.steps[1].verdict, StepVerdict::kSkipped);
  EXPECT_EQ(r.steps[1].note, "not here");
  EXPECT_EQ(r.steps[2].verdict, StepVerdict::kNotRun);
}

TEST(Runner, NotApplicableAndUnknownBackends) {
  auto s = Make("");
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
  auto s = Make("");
  s.steps[1].args["length"].str = "64K";
  scenario::Step verify{"verify"};
  verify.args["span"].str = "m";
  verify.args["length"].str = "8K";  // inside a 64K mapping, past a 4K one
  s.steps.push_back(verify);
  auto own = RunScenario(s, MockBackend());
  EXPECT_EQ(own.verdict, ScenarioVerdict::kReproduced) << own.reason;

  scenario::Value four_k;
  four_k.str = "4K";
  s.steps[1].on["platform=sim,region=mock,gpu=sim"].args["length"] = four_k;
  auto overridden = RunScenario(s, MockBackend());
  EXPECT_EQ(overridden.verdict, ScenarioVerdict::kFailed);
  EXPECT_EQ(overridden.steps[3].verdict, StepVerdict::kFail) << overridden.reason;

  s.steps[1].on.clear();
  s.steps[1].on["cuda"].args["length"] = four_k;  // another backend's override changes nothing
  EXPECT_EQ(RunScenario(s, MockBackend()).verdict, ScenarioVerdict::kReproduced);
}

// `passes` measures several times and reports the median, and says how many.
TEST(Runner, PassesTakeTheMedian) {
  scenario::Scenario s;
  s.name = "passes";
  s.kind = "check";
  s.machine = *sim::MachinePreset("h100-host");
  scenario::Step pinned{"alloc_pinned"};
  pinned.args["as"].str = "p";
  pinned.args["length"].str = "16M";
  scenario::Step dev{"alloc_device"};
  dev.args["as"].str = "d";
  dev.args["length"].str = "16M";
  scenario::Step copy{"copy"};
  copy.args["direction"].str = "h2d";
  copy.args["host"].str = "p";
  copy.args["device"].str = "d";
  copy.args["length"].str = "16M";
  copy.args["passes"].kind = scenario::Value::Kind::kInt;
  copy.args["passes"].i = 5;
  s.steps = {pinned, dev, copy};
  RunOptions o;
  auto r = RunScenario(s, o);
  ASSERT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  EXPECT_EQ(r.steps[2].numbers["passes"], 5);
  EXPECT_GT(r.steps[2].numbers["mbps"], 40000);  // the model's pinned link, 53.8 GB/s
  s.steps[2].args["passes"].i = 0;
  EXPECT_EQ(RunScenario(s, o).verdict, ScenarioVerdict::kFailed);
}

}  // namespace
}  // namespace resmem::engine
