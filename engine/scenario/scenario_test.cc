#include "engine/scenario/scenario.h"

#include <cerrno>
#include <csignal>
#include <variant>

#include "backends/api/gpu.h"
#include "engine/scenario/step_defs.h"
#include "gtest/gtest.h"

namespace resmem::scenario {
namespace {

constexpr char kGood[] = R"(
[scenario]
name = "demo"
kind = "bug"
seed = 9

[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=16G$4G"

[driver]
mode = "pages"
cache = "wc"

[cuda]
profile = "cuda-4.1-r285"

[[fault]]
point = "gpu.copy"
trigger = "nth"
nth = 2
error = "cudaErrorUnknown"

[[step]]
do = "open"

[[step]]
do = "mmap"
as = "res"
length = "1G"
[step.on.cuda]
skip = "no module there"

[[step]]
do = "register"
span = "res"
flags = ["portable", "iomemory"]
expect = { error = "cudaErrorUnknown" }
)";

TEST(Scenario, ParsesEverySection) {
  auto r = ParseScenarioText(kGood, "demo.toml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Scenario& s = (*r)[0];
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.machine.cmdline, "mem=4G memmap=16G$4G");
  EXPECT_EQ(s.driver.mode, MapMode::kPages);
  EXPECT_EQ(s.driver.cache, CacheType::kWriteCombining);
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].error.code(), 30);  // 4.1 numbering, since [cuda] came first
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(*s.steps[1].on.at("cuda").skip, "no module there");
  EXPECT_FALSE(s.steps[1].on.at("cuda").args);  // no arguments of its own there
  // Typed once: the mapping's length in bytes, the flags as bits, the error resolved.
  const auto& mmap = std::get<MmapStep>(s.steps[1].args);
  EXPECT_EQ(mmap.as, "res");
  EXPECT_EQ(mmap.length, std::optional<uint64_t>(1ull << 30));
  EXPECT_TRUE(mmap.writable);  // the default
  EXPECT_EQ(s.steps[1].line, 27);
  EXPECT_EQ(s.steps[1].file, "demo.toml");
  EXPECT_STREQ(s.steps[1].name(), "mmap");
  const auto& reg = std::get<RegisterStep>(s.steps[2].args);
  EXPECT_EQ(reg.flags, static_cast<uint32_t>(kRegisterPortable | kRegisterIoMemory));
  EXPECT_FALSE(reg.length);  // the whole span
  ASSERT_TRUE(s.steps[2].expect.error);
  EXPECT_EQ(s.steps[2].expect.error->value.kind, ExpectedError::Kind::kCudaName);
  EXPECT_EQ(s.steps[2].expect.error->value.cuda_name, "cudaErrorUnknown");
  EXPECT_EQ(s.steps[2].expect.error->line, 38);
  EXPECT_EQ(s.steps[2].expect.Describe(), "error=cudaErrorUnknown");
  EXPECT_TRUE(s.steps[0].expect.empty());
  EXPECT_EQ(s.steps[0].expect.Describe(), "ok");
}

TEST(Scenario, ErrorNamesAreResolvedAtLoad) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  auto r = ParseScenarioText(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"ENXIO\" }\n"
                                    "[[step]]\ndo = \"open\"\nexpect = { error = \"SIGBUS\" }\n"
                                    "[[step]]\ndo = \"open\"\nexpect = { error = \"any\" }\n"
                                    "[[step]]\ndo = \"open\"\nexpect = { error = 712 }\n", "e.toml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& steps = (*r)[0].steps;
  EXPECT_EQ(steps[0].expect.error->value.kind, ExpectedError::Kind::kErrno);
  EXPECT_EQ(steps[0].expect.error->value.code, ENXIO);
  EXPECT_EQ(steps[1].expect.error->value.kind, ExpectedError::Kind::kSignal);
  EXPECT_EQ(steps[1].expect.error->value.code, SIGBUS);
  EXPECT_EQ(steps[2].expect.error->value.kind, ExpectedError::Kind::kAny);
  EXPECT_EQ(steps[3].expect.error->value.kind, ExpectedError::Kind::kCode);
  EXPECT_EQ(steps[3].expect.error->value.code, 712);
}

void ExpectError(const std::string& text, const std::string& want_line, const std::string& want_key) {
  auto r = ParseScenarioText(text, "bad.toml");
  ASSERT_FALSE(r.ok()) << "parsed: " << text;
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("bad.toml:" + want_line + ":"), std::string::npos) << m;
  EXPECT_NE(m.find("'" + want_key + "'"), std::string::npos) << m;
}

TEST(Scenario, MalformedFilesNameFileLineAndKey) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  ExpectError(head + "[[step]]\ndo = \"teleport\"\n", "6", "step.do");
  ExpectError(head + "[[step]]\ndo = \"open\"\nspeed = 3\n", "7", "step.speed");
  ExpectError(head + "[[step]]\ndo = \"mmap\"\nas = \"r\"\nlength = \"12Q\"\n", "8", "step.length");
  ExpectError(head + "[[step]]\ndo = \"register\"\n", "5", "step.span");
  ExpectError(head + "[driver]\nmode = \"fast\"\n[[step]]\ndo = \"open\"\n", "6", "driver.mode");
  ExpectError("[scenario]\nname = \"x\"\n[machine]\npreset = \"nope\"\n[[step]]\ndo = \"open\"\n", "4", "machine.preset");
  ExpectError(head + "[[fault]]\npoint = \"gpu.warp\"\nerror = \"EIO\"\n[[step]]\ndo = \"open\"\n", "6", "fault.point");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { speed = 1 }\n", "7", "step.expect.speed");
  ExpectError(head + "colour = \"red\"\n[[step]]\ndo = \"open\"\n", "5", "machine.colour");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"nonsense\" }\n", "7", "step.expect.error");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"ENOTANERRNO\" }\n", "7", "step.expect.error");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"SIGNOPE\" }\n", "7", "step.expect.error");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"cudaErrorNoSuchThing\" }\n", "7", "step.expect.error");
  ExpectError(head + "[[step]]\ndo = \"memcpy\"\ndst = \"a\"\nsrc = \"b\"\nlength = \"1M\"\npasses = 0\n", "10", "step.passes");
  ExpectError(head + "[[step]]\ndo = \"boot\"\nexpect = { usable_ram = \"lots\" }\n", "7", "step.expect.usable_ram");
}

// Non-table entries of step/fault were skipped, and `step = []` too: a file with no step got a
// verdict (REPRODUCED, exit 0). Each entry must be a table, and there must be at least one step.
TEST(Scenario, StepsAndFaultsAreTablesAndThereIsAStep) {
  const std::string head = "[scenario]\nname = \"x\"\nkind = \"bug\"\n[machine]\npreset = \"seed000-workstation\"\n";
  const std::string step = "[[step]]\ndo = \"open\"\n";
  ExpectError("step = []\n" + head, "1", "step");
  ExpectError("step = [1, 2]\n" + head, "1", "step[0]");
  ExpectError("step = [{ do = \"open\" }, \"boot\"]\n" + head, "1", "step[1]");
  ExpectError("fault = [\"x\"]\n" + head + step, "1", "fault[0]");
  auto r = ParseScenarioText("step = []\n" + head, "bad.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a scenario needs at least one step"), std::string::npos)
      << r.status().message();
  r = ParseScenarioText("step = [1, 2]\n" + head, "bad.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("key 'step[0]': an integer, not a table: write each step as a [[step]] table"),
            std::string::npos) << r.status().message();
  auto none = ParseScenarioText("fault = []\n" + head + step, "ok.toml");  // no fault is fine
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE((*none)[0].faults.empty());
}

// A misspelt backend (not_applicable.kmdo, [step.on.cdua]) matched no run, so the file still
// ran on the backend it meant to leave out. The names are the ones `resmem run --backend` takes.
TEST(Scenario, BackendNamesAreOnesRunTakes) {
  const std::string step = "[machine]\npreset = \"seed000-workstation\"\n[[step]]\ndo = \"open\"\n";
  ExpectError("[scenario]\nname = \"x\"\nnot_applicable.kmdo = \"why\"\n" + step, "3",
              "scenario.not_applicable.kmdo");
  ExpectError("[scenario]\nname = \"x\"\nnot_applicable.cdua = { \"1G\" = \"why\" }\n[sweep]\ns = [\"1G\"]\n" + step,
              "3", "scenario.not_applicable.cdua");
  ExpectError("[scenario]\nname = \"x\"\n" + step + "[step.on.cdua]\nskip = \"no\"\n", "7", "step.on.cdua");
  auto r = ParseScenarioText("[scenario]\nname = \"x\"\n" + step + "[step.on.cdua]\nskip = \"no\"\n", "bad.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown backend 'cdua'; use one of sim, kmod, fuse, host, cuda, kmod+cuda"),
            std::string::npos) << r.status().message();
  // Every preset, and a backend spelled out by its parts, is a name.
  auto good = ParseScenarioText("[scenario]\nname = \"x\"\nnot_applicable.\"kmod+cuda\" = \"why\"\n"
                                "not_applicable.fuse = \"why\"\n" + step +
                                "[step.on.\"platform=host,region=memfd,gpu=sim\"]\nskip = \"no\"\n"
                                "[step.on.sim]\nskip = \"no\"\n", "good.toml");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ((*good)[0].steps[0].on.size(), 2u);
}

// nth = -1 and max_fires = -5 were cast to uint64, code = 99999999999 to int, delay_ms = -100
// and abi_version = -1 taken: each is refused with the range it allows.
TEST(Scenario, FaultAndDriverNumbersOutsideTheirRange) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  const std::string step = "[[step]]\ndo = \"open\"\n";
  auto refused = [&](const std::string& body, const std::string& want) {
    auto r = ParseScenarioText(head + body + step, "bad.toml");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  const std::string fault = "[[fault]]\npoint = \"gpu.copy\"\n";
  refused(fault + "trigger = \"nth\"\nnth = -1\nerror = \"EIO\"\n",
          "bad.toml:8: key 'fault.nth': -1 is out of range: give at least 1");
  refused(fault + "nth = 0\nerror = \"EIO\"\n", "key 'fault.nth': 0 is out of range: give at least 1");
  refused(fault + "max_fires = -5\nerror = \"EIO\"\n",
          "bad.toml:7: key 'fault.max_fires': -5 is out of range: give at least 0 (0: unlimited)");
  refused(fault + "effect = \"delay\"\ndelay_ms = -100\n",
          "bad.toml:8: key 'fault.delay_ms': -100 is out of range: give a finite number, at least 0");
  refused(fault + "effect = \"delay\"\ndelay_ms = nan\n", "key 'fault.delay_ms': nan is out of range");
  refused(fault + "error = \"cudaErrorUnknown\"\ncode = 99999999999\n",
          "bad.toml:8: key 'fault.code': 99999999999 is out of range: give 1 to 2147483647");
  refused("[driver]\nabi_version = -1\n",
          "bad.toml:6: key 'driver.abi_version': -1 is out of range: give 0 to 4294967295");
  refused("[driver]\nabi_version = 4294967296\n", "key 'driver.abi_version': 4294967296 is out of range");
  auto ok = ParseScenarioText(head + "[driver]\nabi_version = 4294967295\n" + fault +
                                  "trigger = \"nth\"\nnth = 3\nmax_fires = 0\nerror = \"cudaErrorUnknown\"\n"
                                  "code = 999\n" + fault + "effect = \"delay\"\ndelay_ms = 0.5\n" + step,
                              "ok.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)[0].driver.abi_version, 4294967295u);
  EXPECT_EQ((*ok)[0].faults[0].nth, 3u);
  EXPECT_EQ((*ok)[0].faults[0].error.code(), 999);
  EXPECT_DOUBLE_EQ((*ok)[0].faults[1].delay_seconds, 0.0005);
}

// code = N with error = "EIO" or "SIGBUS", or with no error at all (effect = "delay"), was
// dropped unseen: the run injected the errno, the signal or the delay, never the number written.
TEST(Scenario, FaultCodeOnlyWithACudaError) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  const std::string fault = "[[fault]]\npoint = \"gpu.copy\"\n";
  const std::string step = "[[step]]\ndo = \"open\"\n";
  auto refused = [&](const std::string& body, const std::string& want) {
    auto r = ParseScenarioText(head + fault + body + step, "bad.toml");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  refused("error = \"EIO\"\ncode = 5\n",
          "bad.toml:8: key 'fault.code': code = N numbers a CUDA error, but error = \"EIO\" is not "
          "one; remove code, or name a cudaError... in error");
  refused("effect = \"signal\"\nerror = \"SIGBUS\"\ncode = 5\n",
          "bad.toml:9: key 'fault.code': code = N numbers a CUDA error, but error = \"SIGBUS\"");
  refused("effect = \"delay\"\ndelay_ms = 1\ncode = 5\n",
          "bad.toml:9: key 'fault.code': code = N numbers the CUDA error of error = "
          "\"cudaError...\", and effect 'delay' has none; remove code");
}

// tolerance = -5 or nan, and mbps_min above mbps_max, gave FAILED (exit 1) on every backend; a
// stream's rate_hz = -10 or nan ran. They are mistakes in the file: load errors.
TEST(Scenario, ExpectedNumbersAndRatesAreFiniteAndNotNegative) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  const std::string copy = "[[step]]\ndo = \"memcpy\"\ndst = \"a\"\nsrc = \"b\"\nlength = \"1M\"\n";
  auto refused = [&](const std::string& body, const std::string& want) {
    auto r = ParseScenarioText(head + body, "bad.toml");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  refused("[[step]]\ndo = \"boot\"\nexpect = { tolerance = -5, usable_ram = \"3G\" }\n",
          "bad.toml:7: key 'step.expect.tolerance': -5 is out of range: give a finite number, at least 0");
  refused("[[step]]\ndo = \"boot\"\nexpect = { tolerance = nan, usable_ram = \"3G\" }\n",
          "key 'step.expect.tolerance': nan is out of range");
  refused(copy + "expect = { mbps = inf }\n", "key 'step.expect.mbps': inf is out of range");
  refused(copy + "expect = { mbps_min = 5000, mbps_max = 10 }\n",
          "bad.toml:10: key 'step.expect.mbps_max': 10 is below mbps_min 5000: no bandwidth meets "
          "both; give mbps_min <= mbps_max");
  refused(copy + "[step.on.cuda]\nexpect = { mbps_min = 5000, mbps_max = 10 }\n",
          "key 'step.on.cuda.expect.mbps_max': 10 is below mbps_min 5000");
  const std::string stream = "[[step]]\ndo = \"stream\"\nspan = \"m\"\ndevice = \"d\"\nblocks = 4\nblock_size = \"4K\"\n";
  refused(stream + "rate_hz = -10\n", "bad.toml:11: key 'step.rate_hz': -10 is out of range: give a finite number, at least 0");
  refused(stream + "rate_hz = nan\n", "key 'step.rate_hz': nan is out of range");
  refused(stream + "[step.on.cuda]\nrate_hz = -1\n", "key 'step.on.cuda.rate_hz': -1 is out of range");
  auto ok = ParseScenarioText(head + copy + "expect = { mbps_min = 10, mbps_max = 10, tolerance = 0 }\n" +
                                  stream + "rate_hz = 0\n", "ok.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_DOUBLE_EQ((*ok)[0].steps[0].expect.tolerance->value, 0);
}

// One wrong type per step kind, in the step itself and in a backend's arguments: the message
// names the file, the line, the key, what was expected and what was found.
TEST(Scenario, WrongArgumentTypeNamedForEveryKind) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  // A value of the wrong type for each argument type.
  auto wrong = [](ArgType t) -> std::pair<std::string, std::string> {
    switch (t) {
      case ArgType::kSize: case ArgType::kWholeOrSize: return {"true", "expected a size"};
      case ArgType::kName: case ArgType::kText: return {"3", "expected a string"};
      case ArgType::kInt: return {"\"three\"", "expected an integer"};
      case ArgType::kBool: return {"3", "expected true or false"};
      case ArgType::kNumber: return {"\"fast\"", "expected a number"};
      case ArgType::kFlags: return {"3", "expected a list of flag names"};
      case ArgType::kChoice: return {"3", "expected one of"};
    }
    return {"", ""};
  };
  int checked = 0;
  for (const StepDef& def : StepDefs()) {
    for (const ArgDef& arg : def.args) {
      const auto [value, problem] = wrong(arg.type);
      // Line 6: do; line 7: the wrong argument.
      const std::string text = head + "[[step]]\ndo = \"" + def.name + "\"\n" + arg.name + " = " + value + "\n";
      auto r = ParseScenarioText(text, "bad.toml");
      ASSERT_FALSE(r.ok()) << def.name << "." << arg.name;
      const std::string& m = r.status().message();
      EXPECT_NE(m.find("bad.toml:7: key 'step." + arg.name + "': " + problem), std::string::npos)
          << def.name << ": " << m;
      EXPECT_NE(m.find("found "), std::string::npos) << m;
      // The same in [step.on.cuda] (required arguments given first, so only the override is wrong).
      std::string own;
      for (const ArgDef& a : def.args)
        if (a.required) own += a.name + " = " + (a.type == ArgType::kInt ? "1" : a.type == ArgType::kChoice ? "\"" + a.choices[0] + "\"" : a.type == ArgType::kSize ? "\"4K\"" : "\"n\"") + "\n";
      const std::string over = head + "[[step]]\ndo = \"" + def.name + "\"\n" + own + "[step.on.cuda]\n" + arg.name + " = " + value + "\n";
      auto o = ParseScenarioText(over, "bad.toml");
      ASSERT_FALSE(o.ok()) << over;
      EXPECT_NE(o.status().message().find("key 'step.on.cuda." + arg.name + "': " + problem), std::string::npos)
          << o.status().message();
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);  // every argument of every kind
}

// Every expectation a kind lists is defined; every kind's blank is its own alternative.
TEST(StepDefs, TableIsConsistent) {
  ASSERT_EQ(StepDefs().size(), std::variant_size_v<StepArgs>);
  for (size_t i = 0; i < StepDefs().size(); ++i) {
    const StepDef& d = StepDefs()[i];
    EXPECT_EQ(d.blank.index(), i) << d.name;
    EXPECT_EQ(d.name, StepName(d.blank));
    for (const auto& e : d.AllowedExpectations()) EXPECT_TRUE(FindExpectDef(e)) << d.name << ": " << e;
    for (const auto& a : d.args) EXPECT_EQ(a.required, a.default_text.empty()) << d.name << "." << a.name;
  }
}

TEST(Scenario, SyntaxErrorsNameTheLine) {
  auto r = ParseScenarioText("[scenario]\nname = \"x\n", "syn.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("syn.toml:2"), std::string::npos) << r.status().message();
}

TEST(Scenario, SweepMakesOneCasePerValueWithKeyedExpectations) {
  const std::string text = R"(
[scenario]
name = "sw"
[sweep]
size = ["1G", "2G"]
[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=${size}$4G"
[[step]]
do = "boot"
expect.usable_ram = { "1G" = "3G", "2G" = "3G" }
)";
  auto r = ParseScenarioText(text, "sw.toml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].case_label, "size=1G");
  EXPECT_EQ((*r)[1].machine.cmdline, "mem=4G memmap=2G$4G");
  EXPECT_EQ((*r)[1].steps[0].expect.usable_ram->value, 3ull << 30);
  EXPECT_EQ((*r)[1].steps[0].expect.usable_ram->written, "3G");

  const std::string missing = R"(
[scenario]
name = "sw"
[sweep]
size = ["1G", "2G"]
[machine]
preset = "seed000-workstation"
[[step]]
do = "boot"
expect.usable_ram = { "1G" = "3G" }
)";
  auto m = ParseScenarioText(missing, "sw.toml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("2G"), std::string::npos);
}

constexpr char kPerBackend[] = R"(
[scenario]
name = "per-backend"
not_applicable.cuda = { "128G" = "the cliff needs memory types" }

[sweep]
reservation = ["1G", "128G"]

[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=${reservation}$4G"

[[step]]
do = "open"

[[step]]
do = "mmap"
as = "res"
length = "1G"
[step.on.cuda]
length = "4K"
writable = false
expect = { vm_flags = "pf io" }
)";

TEST(ScenarioFile, PerBackendArgumentsAndPerCaseNotApplicable) {
  auto cases = ParseScenarioText(kPerBackend, "per.toml");
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].not_applicable.count("cuda"), 0u);  // 1G applies
  EXPECT_EQ((*cases)[1].not_applicable.at("cuda"), "the cliff needs memory types");
  const auto& on = (*cases)[0].steps[1].on.at("cuda");
  ASSERT_TRUE(on.args);  // typed at load: the step's own arguments with cuda's replacing them
  const auto& there = std::get<MmapStep>(*on.args);
  EXPECT_EQ(there.length, std::optional<uint64_t>(4096));
  EXPECT_FALSE(there.writable);
  EXPECT_EQ(there.as, "res");  // not given there: the step's own
  EXPECT_EQ(on.expect->vm_flags->value, "pf io");
  const auto& own = std::get<MmapStep>((*cases)[0].steps[1].args);
  EXPECT_EQ(own.length, std::optional<uint64_t>(1ull << 30));  // the step's own stays
  EXPECT_TRUE(own.writable);
}

TEST(ScenarioFile, PerBackendArgumentsAreCheckedLikeTheStepsOwn) {
  std::string text = kPerBackend;
  const std::string good = "length = \"4K\"";
  text.replace(text.find(good), good.size(), "lenght = \"4K\"");
  auto bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("per.toml:"), std::string::npos);
  EXPECT_NE(bad.status().message().find("step.on.cuda.lenght"), std::string::npos) << bad.status().message();

  text = kPerBackend;
  text.replace(text.find("writable = false"), 16, "writable = 3");
  bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("per.toml:22: key 'step.on.cuda.writable': expected true or false, found an integer"),
            std::string::npos) << bad.status().message();

  text = kPerBackend;
  text.replace(text.find("length = \"4K\""), 13, "length = \"4Q\"");
  bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("per.toml:21: key 'step.on.cuda.length'"), std::string::npos)
      << bad.status().message();

  text = kPerBackend;
  text.replace(text.find("[sweep]"), 7, "[swept]");
  bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
}

}  // namespace
}  // namespace resmem::scenario

