// resmem plan: every proposal boots on the simulator as a reservation over RAM, write-back, and
// each refusal names why and what would fit.
#include "engine/plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "mock/machine/e820_table.h"
#include "mock/machine/grub.h"
#include "engine/scenario/scenario.h"

namespace resmem::engine {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// Boots `machine` with the plan's kernel command line and checks the reservation is there,
// exactly, over firmware RAM, in no hole, and write-back.
void ExpectBootsAsPlanned(const sim::MachineSpec& machine, const ReservationPlan& plan) {
  sim::MachineSpec after = machine;
  after.cmdline = plan.kernel_cmdline;
  auto k = sim::Boot(after);
  ASSERT_TRUE(k.ok()) << k.status().message();
  bool found = false;
  for (const auto& r : k->reservations) {
    if (r.start != plan.start || r.end != plan.start + plan.size) continue;
    found = true;
    EXPECT_TRUE(r.over_ram) << plan.option;
    EXPECT_FALSE(r.over_hole) << plan.option << ": " << r.conflict;
  }
  EXPECT_TRUE(found) << plan.option << " not reserved by " << plan.kernel_cmdline;
  EXPECT_EQ(sim::EffectiveMemoryType(machine, plan.start, plan.start + plan.size,
                                     MemoryType::kWriteBack),
            MemoryType::kWriteBack);
  EXPECT_EQ(sim::E820BytesOfType(k->e820, plan.start, plan.start + plan.size,
                                 sim::E820Type::kReserved),
            plan.size);
}

TEST(Plan, EveryPresetGetsAReservationThatBootsWriteBack) {
  for (const auto& name : sim::MachinePresetNames()) {
    auto machine = sim::MachinePreset(name);
    ASSERT_TRUE(machine.ok());
    auto booted = sim::Boot(*machine);
    ASSERT_TRUE(booted.ok());
    // A quarter of what the machine has without any memory option, in 2 MiB units.
    sim::MachineSpec plain = *machine;
    plain.cmdline = "";
    const uint64_t ram = sim::Boot(plain)->usable_ram;
    PlanRequest req;
    req.size = ram / 4 / (2 * kMiB) * (2 * kMiB);
    req.replace_reservations = true;  // the seed machines' own reservations are re-planned
    auto plan = PlanReservation(*machine, req);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().message();
    SCOPED_TRACE(name + ": " + plan->option);
    ExpectBootsAsPlanned(*machine, *plan);
    EXPECT_GE(plan->start, 1 * kMiB);
  }
}

TEST(Plan, Seed000ReplacesMemAndMemmapAndStopsAtTheMtrrCliff) {
  auto m = sim::MachinePreset("seed000-workstation");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = 64 * kGiB;
  // By default the seed's own memmap=188G$4G is kept and planned around: nothing is left.
  auto around = PlanReservation(*m, req);
  ASSERT_FALSE(around.ok());
  EXPECT_EQ(around.status().code(), kFailedPrecondition) << around.status().message();
  req.replace_reservations = true;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->option, "memmap=64G$4G");
  EXPECT_EQ(plan->replaced, (std::vector<std::string>{"mem=4G", "memmap=188G$4G"}));
  EXPECT_EQ(plan->kernel_cmdline, "memmap=64G$4G");
  ExpectBootsAsPlanned(*m, *plan);

  // 188 GB as the seed wanted: it leaves less than the default 4 GiB to the system...
  req.size = 188 * kGiB;
  auto too_much = PlanReservation(*m, req);
  ASSERT_FALSE(too_much.ok());
  EXPECT_NE(too_much.status().message().find("kept for the system"), std::string::npos)
      << too_much.status().message();
  // ... and with 2 GiB kept, the MTRRs still cover only [0, 128G) write-back.
  req.keep = 2 * kGiB;
  auto refused = PlanReservation(*m, req);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("write-back"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("default type is UC"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("the largest write-back place is 124 GiB"),
            std::string::npos)
      << refused.status().message();
}

TEST(Plan, TheLinesForGrubCarryTheEscapingEachNeeds) {
  auto m = sim::MachinePreset("seed002-workstation");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = 4 * kGiB;
  req.replace_reservations = true;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->option, "memmap=4G$4G");
  EXPECT_EQ(plan->etc_default_grub, "GRUB_CMDLINE_LINUX=\"memmap=4G\\\\\\$4G\"");
  EXPECT_EQ(plan->grub_cfg, "memmap=4G\\$4G");
  EXPECT_EQ(plan->modprobe, "options resmem ranges=4G$4G mode=pages cache=wb");
  // Each spelling, read the way GRUB and grub-mkconfig read it, gives the kernel option back.
  auto cfg = sim::TraceKernelCmdline("grub-cfg", plan->grub_cfg);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_NE((" " + cfg->kernel + " ").find(" " + plan->option + " "), std::string::npos)
      << cfg->kernel;
  const std::string value = plan->etc_default_grub.substr(plan->etc_default_grub.find('=') + 1);
  auto etc = sim::TraceKernelCmdline("etc-default-grub", value);
  ASSERT_TRUE(etc.ok()) << etc.status().message();
  EXPECT_NE((" " + etc->kernel + " ").find(" " + plan->option + " "), std::string::npos)
      << etc->kernel;
}

TEST(Plan, AtInThePciHoleIsRefusedWithTheReason) {
  auto m = sim::MachinePreset("qemu-q35-5g");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = 64 * kMiB;
  req.at = 0xc0000000;
  auto plan = PlanReservation(*m, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("PCI Bus 0000:00"), std::string::npos)
      << plan.status().message();
  req.at = 0x140000000;  // FACTS.md: memmap=64M$0x140000000 worked above 4 GiB
  auto ok = PlanReservation(*m, req);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->option, "memmap=64M$5G");
  ExpectBootsAsPlanned(*m, *ok);
}

TEST(Plan, A32BitDeviceGetsARangeBelow4GClearOfKernelAndInitrd) {
  auto m = sim::MachinePreset("qemu-q35-5g");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = 256 * kMiB;
  req.dma_bits = 32;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_LT(plan->start + plan->size, 4 * kGiB);
  EXPECT_GE(plan->start, 128 * kMiB);
  ExpectBootsAsPlanned(*m, *plan);
}

TEST(Plan, TooLargeSaysTheMostThatFits) {
  auto m = sim::MachinePreset("qemu-q35-2g");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = 8 * kGiB;
  auto plan = PlanReservation(*m, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("reserve at most"), std::string::npos)
      << plan.status().message();
  req.size = 0;
  EXPECT_EQ(PlanReservation(*m, req).status().code(), kInvalidArgument);
  req.size = 4097;
  EXPECT_EQ(PlanReservation(*m, req).status().code(), kInvalidArgument);
}

// --align 3 planned memmap=1G$0x100000002 (no page boundary); --at near 2^64 showed a range
// that wrapped to 0. Both are bad requests now, each naming the way out.
TEST(Plan, AnAlignThatIsNoPowerOfTwoOfPagesAndARangePast2To64AreRefused) {
  auto m = sim::MachinePreset("seed000-workstation");
  ASSERT_TRUE(m.ok());
  PlanRequest req;
  req.size = kGiB;
  req.replace_reservations = true;
  for (uint64_t align : {3, 6 << 10, 0x3000, 2048}) {
    req.align = align;
    auto plan = PlanReservation(*m, req);
    ASSERT_FALSE(plan.ok()) << align << ": " << plan->option;
    EXPECT_EQ(plan.status().code(), kInvalidArgument) << align;
    EXPECT_NE(plan.status().message().find("is not a power of two of 4 KiB or more; give e.g. 2M"),
              std::string::npos)
        << plan.status().message();
  }
  for (uint64_t align : {uint64_t{4096}, 2 * kMiB, kGiB}) {
    req.align = align;
    auto plan = PlanReservation(*m, req);
    ASSERT_TRUE(plan.ok()) << align << ": " << plan.status().message();
    EXPECT_EQ(plan->start % align, 0u) << plan->option;
  }
  req.align = 0;
  for (uint64_t at : {uint64_t{0xfffffffffffff000}, uint64_t{0xffffffffc0000000}}) {
    req.at = at;
    auto plan = PlanReservation(*m, req);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), kInvalidArgument);
    EXPECT_NE(plan.status().message().find("would end at or past 2^64"), std::string::npos)
        << plan.status().message();
  }
}

TEST(Plan, APinnedCrashKernelIsAvoided) {
  auto m = sim::MachinePreset("h100-host");
  ASSERT_TRUE(m.ok());
  m->cmdline = "console=ttyS0 crashkernel=512M@4G";
  PlanRequest req;
  req.size = 16 * kGiB;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_GE(plan->start, 4 * kGiB + 512 * kMiB);
  EXPECT_NE(plan->kernel_cmdline.find("crashkernel=512M@4G"), std::string::npos);
  ExpectBootsAsPlanned(*m, *plan);
}

TEST(Plan, AnotherReservationIsKeptAndAvoided) {
  // A ramoops buffer reserved at 4G (corpus log 25 has the like) stays; mem= goes.
  auto m = sim::MachinePreset("h100-host");
  ASSERT_TRUE(m.ok());
  m->cmdline = "mem=64G memmap=32M$4G ramoops.mem_address=0x100000000 ramoops.mem_size=0x2000000";
  PlanRequest req;
  req.size = 8 * kGiB;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->replaced, (std::vector<std::string>{"mem=64G"}));
  EXPECT_NE(plan->kernel_cmdline.find("memmap=32M$4G"), std::string::npos);
  EXPECT_GE(plan->start, 4 * kGiB + 32 * 1024 * 1024);
  ExpectBootsAsPlanned(*m, *plan);
}

TEST(Plan, TheOptionGoesBeforeADashDash) {
  // A Firecracker guest's line, as recorded on the build machine: what follows "--" goes to init,
  // not to the kernel's early parameters (kernel/params.c parse_args).
  auto m = sim::MachinePreset("h100-host");
  ASSERT_TRUE(m.ok());
  m->cmdline = "console=ttyS0 panic=1 rdinit=/init -- --firecracker-init --addr 0.0.0.0:2024";
  PlanRequest req;
  req.size = 2 * kGiB;
  auto plan = PlanReservation(*m, req);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->kernel_cmdline, "console=ttyS0 panic=1 rdinit=/init memmap=2G$4G -- "
                                  "--firecracker-init --addr 0.0.0.0:2024");
  ExpectBootsAsPlanned(*m, *plan);
}

TEST(Plan, ALockedDownKernelGetsNoRangesParameter) {
  sim::MachineSpec m = *sim::MachinePreset("qemu-q35-5g");
  m.kernel_version = "6.1.0-56-amd64";
  PlanRequest req;
  req.size = 64 * kMiB;
  auto open = PlanReservation(m, req);
  ASSERT_TRUE(open.ok()) << open.status().message();
  EXPECT_EQ(open->modprobe.rfind("options resmem ranges=", 0), 0u) << open->modprobe;
  m.module_policy.described = true;
  m.module_policy.efi = m.module_policy.secure_boot = true;  // Debian locks down to integrity
  auto locked = PlanReservation(m, req);
  ASSERT_TRUE(locked.ok()) << locked.status().message();
  EXPECT_EQ(locked->modprobe, "options resmem mode=pages cache=wb");
  ASSERT_FALSE(locked->warnings.empty());
  EXPECT_NE(locked->warnings.back().find("locked down (integrity"), std::string::npos) << locked->warnings.back();
  ExpectBootsAsPlanned(m, *locked);
}

TEST(Plan, MemparseSpellingIsExact) {
  EXPECT_EQ(MemparseSpelling(188 * kGiB), "188G");
  EXPECT_EQ(MemparseSpelling(64 * kMiB), "64M");
  EXPECT_EQ(MemparseSpelling(0x40001000), "1048580K");
  EXPECT_EQ(MemparseSpelling(1ull << 40), "1T");
  EXPECT_EQ(MemparseSpelling(0x123), "0x123");
}

}  // namespace
}  // namespace resmem::engine

namespace resmem::engine {
namespace {

// Every machine of the corpus of real boot logs (mock/machine/corpus): the plan's command line,
// booted with that machine's kernel version, reserves exactly what it printed.
TEST(PlanOnCorpus, EveryCorpusMachineGetsAReservationThatBoots) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  ASSERT_NE(srcdir, nullptr) << "run under bazel test";
  const std::string dir = std::string(srcdir) + "/resmem/mock/machine/corpus";
  std::vector<std::string> logs;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".log") logs.push_back(e.path().string());
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 20u);
  int planned = 0;
  for (const auto& log : logs) {
    SCOPED_TRACE(log);
    auto machine = scenario::LoadMachineSource({log});
    ASSERT_TRUE(machine.ok()) << machine.status().message();
    sim::MachineSpec plain = *machine;
    plain.cmdline = "";
    const uint64_t ram = sim::Boot(plain)->usable_ram;
    PlanRequest req;
    req.size = std::max<uint64_t>(2 * kMiB, ram / 4 / (2 * kMiB) * (2 * kMiB));
    auto plan = PlanReservation(*machine, req);
    if (!plan.ok()) {
      // A refusal must say why and what would do (a kernel too old for memmap=nn$ss, a machine
      // too small): never an internal error.
      EXPECT_NE(plan.status().code(), kInternal) << plan.status().message();
      std::cout << log << ": no plan: " << plan.status().message() << "\n";
      continue;
    }
    ++planned;
    ExpectBootsAsPlanned(*machine, *plan);
  }
  std::cout << planned << " of " << logs.size() << " corpus machines planned\n";
  EXPECT_GE(planned, 20);
}

}  // namespace
}  // namespace resmem::engine
