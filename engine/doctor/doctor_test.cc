#include "engine/doctor/doctor.h"

#include <map>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mock/region/region_mocks.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"

namespace resmem::engine {
namespace {

using ::testing::Return;
using ::testing::ByMove;

// A platform whose sources are given texts, as a real machine would show them.
class TextPlatform : public Platform {
 public:
  explicit TextPlatform(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  std::string name() const override { return "text"; }
  Result<std::string> ReadSource(const std::string& path) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Errno(ENOENT, path + " absent");
    return it->second;
  }
  Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t) override { return Status::Unsupported("no"); }
  Result<double> CopyHost(HostMemory&, uint64_t, HostMemory&, uint64_t, uint64_t) override {
    return Status::Unsupported("no");
  }
  Clock& clock() override { return clock_; }

 private:
  std::map<std::string, std::string> files_;
  VirtualClock clock_;
};

// A 12 GB machine as seed 002 describes it: RAM to 3G, PCI hole, RAM 4G-13G.
std::map<std::string, std::string> Seed002(const std::string& cmdline, const std::string& iomem) {
  return {
      {"/proc/cmdline", cmdline + "\n"},
      {"/proc/meminfo", "MemTotal:        3000000 kB\n"},
      {"/proc/iomem", iomem},
      {"/sys/firmware/memmap",
       "0x0000000000000000 0x000000000009fbff System RAM\n"
       "0x0000000000100000 0x00000000bfffffff System RAM\n"
       "0x00000000fec00000 0x00000000fec00fff Reserved\n"
       "0x0000000100000000 0x000000033fffffff System RAM\n"},
      {"/proc/mtrr",
       "reg00: base=0x000000000 (    0MB), size=16384MB, count=1: write-back\n"
       "reg01: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n"},
      {"/proc/cpuinfo", "address sizes\t: 36 bits physical, 48 bits virtual\n"},
  };
}

bool Has(const DoctorReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return true;
  return false;
}

TEST(Doctor, MemLimitBelowTheHole) {
  TextPlatform p(Seed002("mem=4G memmap=8G$4G",
                         "00000000-0009fbff : System RAM\n00100000-bfffffff : System RAM\n"
                         "100000000-2ffffffff : Reserved\n"));
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Has(*r, "mem-limit-below-hole"));
  EXPECT_FALSE(Has(*r, "reservation-over-hole"));
  EXPECT_FALSE(Has(*r, "reservation-not-write-back"));  // [4G,12G) is inside the 16 GB WB MTRR
  EXPECT_TRUE(Has(*r, "register-larger-than-memtotal"));
  ASSERT_EQ(r->facts.reservations.size(), 1u);
  EXPECT_EQ(r->facts.reservations[0].start, 4ull << 30);
}

TEST(Doctor, UnescapedDollarAndHoleAndUncached) {
  TextPlatform p1(Seed002("memmap=8G", "00100000-bfffffff : System RAM\n"));
  auto r1 = Diagnose(p1, nullptr);
  ASSERT_TRUE(r1.ok());
  EXPECT_TRUE(Has(*r1, "memmap-without-reservation"));
  EXPECT_TRUE(Has(*r1, "no-reservation"));
  EXPECT_TRUE(r1->has_errors());

  TextPlatform p2(Seed002("memmap=256M$0xc0000000", "00100000-bfffffff : System RAM\n"));
  auto r2 = Diagnose(p2, nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(Has(*r2, "reservation-over-hole"));
  EXPECT_TRUE(Has(*r2, "reservation-not-write-back"));  // the UC MTRR over the hole

  TextPlatform p3(Seed002("memmap=8G$0x140000000", "00100000-bfffffff : System RAM\n"));
  auto r3 = Diagnose(p3, nullptr);
  ASSERT_TRUE(r3.ok());
  EXPECT_FALSE(Has(*r3, "reservation-over-hole"));
  EXPECT_FALSE(Has(*r3, "reservation-not-write-back"));  // [5G,13G) lies inside the 16 GB WB MTRR
}

TEST(Doctor, DeviceAbiSkewAndPfnmapAdvice) {
  TextPlatform p(Seed002("memmap=8G$0x140000000", "00100000-bfffffff : System RAM\n"));
  testing::NiceMock<MockRegionProvider> provider;
  auto handle = std::make_unique<testing::NiceMock<MockRegionHandle>>();
  RegionInfo info;
  info.device = "/dev/resmem0";
  info.phys_addr = 5ull << 30;
  info.size = 8ull << 30;
  info.mode = MapMode::kPfnmap;
  info.abi_version = 99;
  EXPECT_CALL(*handle, Info()).WillRepeatedly(Return(Result<RegionInfo>(info)));
  EXPECT_CALL(provider, List()).WillOnce(Return(Result<std::vector<std::string>>(std::vector<std::string>{"/dev/resmem0"})));
  EXPECT_CALL(provider, Open(testing::_))
      .WillOnce(Return(ByMove(Result<std::unique_ptr<RegionHandle>>(std::move(handle)))));
  auto r = Diagnose(p, &provider);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "abi-version-skew"));
  EXPECT_TRUE(Has(*r, "pfnmap-needs-iomemory"));
  ASSERT_EQ(r->devices.size(), 1u);
}

TEST(Doctor, DefaultTypeInferredWriteBackWhenOnlyHolesAreListed) {
  // SeaBIOS/QEMU: one UC range over the PCI hole, default type WB (not shown in /proc/mtrr).
  auto files = Seed002("memmap=64M$0x40000000 memmap=64M$0xc0000000", "00100000-bfffffff : System RAM\n");
  files["/proc/mtrr"] = "reg00: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n";
  TextPlatform p(files);
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->facts.reservations.size(), 2u);
  EXPECT_TRUE(r->facts.reservations[0].uniform_write_back) << r->facts.reservations[0].mtrr_detail;
  EXPECT_FALSE(r->facts.reservations[1].uniform_write_back);
}

TEST(Doctor, MissingSourcesAreNotedNotFatal) {
  TextPlatform p(std::map<std::string, std::string>{{"/proc/cmdline", "quiet\n"}});
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "no-reservation"));
  EXPECT_GE(r->facts.unreadable.size(), 4u);
}

// The doctor reads memory options the way the machine's kernel does (sim::Boot over the firmware
// map; the rules are tested one by one in mock/machine/linux_boot_test.cc). Each option that did
// not do what its author meant gets a finding.
const Finding* Find(const DoctorReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

DoctorReport DiagnoseLine(const std::string& cmdline, const std::string& osrelease = "") {
  auto files = Seed002(cmdline, "00100000-bfffffff : System RAM\n");
  if (!osrelease.empty()) files["/proc/sys/kernel/osrelease"] = osrelease + "\n";
  TextPlatform p(files);
  auto r = Diagnose(p, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : DoctorReport{};
}

TEST(DoctorOptions, EachMisreadOptionIsNamedWithWhatTheKernelDid) {
  struct Case {
    const char* cmdline;
    const char* id;
  };
  for (const Case& c : std::vector<Case>{
           {"memmap=8G$", "memmap-no-start-address"},        // reserves [0, 8G)
           {"memmap=8G4G", "memmap-without-reservation"},    // acts as mem=8G
           {"memmap=8GG", "memmap-without-reservation"},
           {"memmap=1G$5Gx", "option-malformed"},            // applied, 'x' ignored
           {"mem=4Gb memmap=1G$5G", "option-trailing-ignored"},
           {"mem=abc", "option-no-effect"},
           {"memmap=0$5G", "option-zero-size"},
           {"memmap=0", "memmap-removes-all-ram"},
           {"quiet -- memmap=1G$5G", "option-after-dashdash"},
           {"memmap=1G$0xffffffffc0000000", "memmap-end-wraps"},
           {"memmap=1G%5G-1+1", "memmap-same-types"},
           {"memmap=2G$5G memmap=1G$6G", "reservations-overlap"},
           {"mem=5G memmap=1G$5G", "mem-below-reservation"},  // RAM [6G, 13G) lost
       }) {
    const auto r = DiagnoseLine(c.cmdline);
    const Finding* f = Find(r, c.id);
    ASSERT_NE(f, nullptr) << c.cmdline << " should give " << c.id;
    EXPECT_NE(f->evidence.find(c.cmdline), std::string::npos) << f->evidence;
  }
  EXPECT_NE(Find(DiagnoseLine("memmap=1G$0xffffffffc0000000"), "kernel-panics-on-map"), nullptr);
  // memmap=8G$ really reserves [0, 8G): the reservation is listed as the kernel holds it.
  const auto r = DiagnoseLine("memmap=8G$");
  ASSERT_EQ(r.facts.reservations.size(), 1u);
  EXPECT_EQ(r.facts.reservations[0].start, 0u);
  EXPECT_EQ(r.facts.reservations[0].end, 8ull << 30);
  // A clean line gives none of these.
  const auto clean = DiagnoseLine("quiet memmap=1G$0x140000000");
  for (const auto& f : clean.findings)
    EXPECT_TRUE(f.id.rfind("option-", 0) != 0 && f.id.rfind("memmap-", 0) != 0) << f.id;
}

TEST(DoctorOptions, TheKernelVersionDecidesTheRules) {
  // /proc/sys/kernel/osrelease names the rules: '!' arrived in 4.1, so 3.19 reads
  // memmap=1G!5G as mem=1G; 6.1 reserves it as type 12.
  EXPECT_NE(Find(DiagnoseLine("memmap=1G!5G", "3.19.8"), "option-unknown-form"), nullptr);
  EXPECT_EQ(Find(DiagnoseLine("memmap=1G!5G", "6.1.0-13-amd64"), "option-unknown-form"), nullptr);
}

// The IOMMU from its sysfs (the texts a real machine shows), explained by the command line.
DoctorReport DiagnoseIommu(const std::string& cmdline, const std::map<std::string, std::string>& sysfs) {
  auto files = Seed002(cmdline, "00100000-bfffffff : System RAM\n");
  for (const auto& [k, v] : sysfs) files[k] = v;
  TextPlatform p(files);
  auto r = Diagnose(p, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : DoctorReport{};
}

const std::map<std::string, std::string> kVtdOn = {
    {"/sys/class/iommu", "dmar0: 0000:00:00.0 0000:00:10.0\n"},
    {"/sys/kernel/iommu_groups", "0 DMA-FQ 0000:00:00.0\n1 DMA-FQ 0000:00:10.0\n"},
    {"/sys/firmware/acpi/tables", "APIC\nDMAR\nDSDT\nFACP\n"}};

TEST(DoctorIommu, TranslatingSaysTheDriverMustUseTheDmaApi) {
  const auto r = DiagnoseIommu("intel_iommu=on memmap=64M$0x140000000", kVtdOn);
  EXPECT_EQ(r.facts.iommu.state, MachineFacts::Iommu::State::kTranslating);
  EXPECT_EQ(r.facts.iommu.firmware, sim::IommuVendor::kIntel);
  const Finding* f = Find(r, "iommu-translating");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->evidence.find("dmar0 (2 devices)"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("2 devices in DMA-FQ (translated) domains"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("intel_iommu=on and the firmware's DMAR table"), std::string::npos)
      << f->evidence;
  EXPECT_NE(f->remedy.find("dma_map_resource"), std::string::npos);
  EXPECT_NE(f->remedy.find("fault addr 0x40000000"), std::string::npos);
  EXPECT_NE(f->remedy.find("nvidia_p2p_dma_map_pages"), std::string::npos);
  EXPECT_EQ(f->seed, "003_abde52ad60696996.txt");
  EXPECT_EQ(Find(r, "iommu-off"), nullptr);
  EXPECT_EQ(Find(r, "iommu-option-ignored"), nullptr);
  // Without intel_iommu=on the same sysfs is a default-on kernel (Debian's 6.1): the rules say so.
  const auto d = DiagnoseIommu("quiet", kVtdOn);
  ASSERT_NE(Find(d, "iommu-translating"), nullptr);
  EXPECT_NE(Find(d, "iommu-translating")->evidence.find("INTGPU_OFF"), std::string::npos);
  EXPECT_TRUE(d.facts.iommu.rules_agree);
}

TEST(DoctorIommu, PassthroughAndOffNameThe32BitLimit) {
  auto pt = kVtdOn;
  pt["/sys/kernel/iommu_groups"] = "0 identity 0000:00:00.0 0000:00:10.0\n";
  const auto r = DiagnoseIommu("iommu=pt memmap=64M$0x140000000", pt);
  const Finding* f = Find(r, "iommu-passthrough");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("a 32-bit DMA card cannot reach memmap=64M$0x140000000"), std::string::npos)
      << f->title;
  EXPECT_NE(f->evidence.find("2 devices in identity domains"), std::string::npos) << f->evidence;
  EXPECT_EQ(Find(r, "iommu-translating"), nullptr);

  // No DMAR table: VT-d is off in the firmware; intel_iommu=on is taken and does nothing.
  const auto off = DiagnoseIommu("intel_iommu=on memmap=64M$0x40000000",
                                 {{"/sys/class/iommu", ""}, {"/sys/kernel/iommu_groups", ""},
                                  {"/sys/firmware/acpi/tables", "APIC\nDSDT\nFACP\n"}});
  const Finding* o = Find(off, "iommu-off");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->title.find("cannot reach"), std::string::npos);  // the range is below 4 GiB
  EXPECT_NE(o->evidence.find("no DMAR or IVRS table"), std::string::npos) << o->evidence;
  EXPECT_NE(o->remedy.find("below 4 GiB"), std::string::npos);
  EXPECT_NE(o->remedy.find("firmware setup"), std::string::npos);
  const Finding* n = Find(off, "iommu-option-no-effect");
  ASSERT_NE(n, nullptr);
  EXPECT_NE(n->remedy.find("turn VT-d on in the firmware setup"), std::string::npos) << n->remedy;
}

TEST(DoctorIommu, OptionsTheKernelDoesNotTake) {
  // AMD: amd_iommu=on is an unknown item (AMD-Vi is on anyway); iommu=on is skipped silently;
  // Linux 6.1's kstrtobool does not take "enable".
  const auto r = DiagnoseIommu("amd_iommu=on iommu=on iommu.passthrough=enable",
                               {{"/sys/class/iommu", "ivhd0: 0000:00:00.0\n"},
                                {"/sys/kernel/iommu_groups", "0 DMA-FQ 0000:00:00.0\n"},
                                {"/sys/firmware/acpi/tables", "APIC\nIVRS\n"},
                                {"/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n"}});
  std::vector<const Finding*> ignored;
  for (const auto& f : r.findings)
    if (f.id == "iommu-option-ignored") ignored.push_back(&f);
  ASSERT_EQ(ignored.size(), 3u);
  EXPECT_NE(ignored[0]->evidence.find("'AMD-Vi: Unknown option - 'on''"), std::string::npos)
      << ignored[0]->evidence;
  EXPECT_NE(ignored[0]->remedy.find("drop amd_iommu=on"), std::string::npos);
  EXPECT_NE(ignored[1]->evidence.find("prints nothing"), std::string::npos);
  EXPECT_NE(ignored[1]->remedy.find("intel_iommu=on"), std::string::npos);
  EXPECT_NE(ignored[2]->evidence.find("Malformed early option 'iommu.passthrough'"), std::string::npos);
  EXPECT_NE(ignored[2]->remedy.find("iommu.passthrough=1"), std::string::npos);
  ASSERT_NE(Find(r, "iommu-translating"), nullptr);
  EXPECT_NE(Find(r, "iommu-translating")->title.find("AMD-Vi"), std::string::npos);
}

TEST(DoctorIommu, NewerKernelsTakeEnableAsTrue) {
  // From 6.15 kstrtobool takes "enable" (mock/machine/linux_rules.h): the QEMU lane's 7.3 kernel
  // put every group in an identity domain for iommu.passthrough=enable and printed no complaint.
  const auto r = DiagnoseIommu("intel_iommu=on iommu.passthrough=enable memmap=64M$0x40000000",
                               {{"/sys/class/iommu", "dmar0: 0000:00:00.0 0000:00:10.0\n"},
                                {"/sys/kernel/iommu_groups",
                                 "0 identity 0000:00:00.0\n1 identity 0000:00:10.0\n"},
                                {"/sys/firmware/acpi/tables", "APIC\nDMAR\nDSDT\nFACP\n"},
                                {"/proc/sys/kernel/osrelease", "7.3.4+deb13-amd64\n"}});
  for (const auto& f : r.findings) EXPECT_NE(f.id, "iommu-option-ignored") << f.evidence;
  EXPECT_TRUE(r.facts.iommu.rules_agree);
  EXPECT_TRUE(r.facts.iommu.kernel.domain_from_cmdline);
  EXPECT_EQ(r.facts.iommu.kernel.default_domain, IommuDomainType::kIdentity);
}

TEST(DoctorIommu, UnreadableSysfsIsUnknownNotOff) {
  const auto r = DiagnoseIommu("intel_iommu=on", {});
  EXPECT_EQ(r.facts.iommu.state, MachineFacts::Iommu::State::kUnknown);
  ASSERT_NE(Find(r, "iommu-state-unknown"), nullptr);
  EXPECT_EQ(Find(r, "iommu-off"), nullptr);
  // Without the firmware, "no effect" cannot be told; an unknown item still can.
  EXPECT_EQ(Find(r, "iommu-option-no-effect"), nullptr);
  EXPECT_NE(Find(DiagnoseIommu("intel_iommu=yes", {}), "iommu-option-ignored"), nullptr);
  // A malformed sysfs text is unreadable, not a crash.
  const auto bad = DiagnoseIommu("", {{"/sys/kernel/iommu_groups", "x DMA\n"}});
  EXPECT_EQ(bad.facts.iommu.state, MachineFacts::Iommu::State::kUnknown);
  const std::string json = DoctorJson(r);
  EXPECT_NE(json.find("\"state\": \"unknown\""), std::string::npos);
}

// A paste or command line that is not UTF-8 (a fuzzed paste, a log in Latin-1) reaches the JSON
// report as U+FFFD, never as nlohmann's type_error 316 that aborted `doctor --json`.
TEST(DoctorJson, TextThatIsNotUtf8IsReplacedNotThrown) {
  const auto r = DiagnoseIommu("intel_iommu=\xff\xfe", {});
  std::string json;
  EXPECT_NO_THROW(json = DoctorJson(r));
  EXPECT_NE(json.find("\xef\xbf\xbd"), std::string::npos) << json;
}

// ---- The module policy: whether the kernel loads resmem.ko (module_policy_doctor.h), on
// simulated machines (the policy in the machine model, its files rendered by the simulator).

struct SimMachine {
  std::shared_ptr<sim::SimWorld> world;
  std::unique_ptr<Platform> platform;
  std::unique_ptr<RegionProvider> regions;
};

SimMachine Boot(const std::string& cmdline, const sim::ModulePolicySpec& policy) {
  auto spec = sim::MachinePreset("qemu-q35-5g");
  EXPECT_TRUE(spec.ok());
  sim::MachineSpec m = *spec;
  m.kernel_version = "6.1.0-56-amd64";
  m.cmdline = cmdline;
  m.module_policy = policy;
  auto w = sim::MakeSimWorld(m, 1);
  EXPECT_TRUE(w.ok()) << w.status().message();
  SimMachine out;
  out.world = *w;
  out.platform = sim::MakeSimPlatform(out.world);
  out.regions = sim::MakeSimRegionProvider(out.world, sim::SimDriverSpec{});
  return out;
}

sim::ModulePolicySpec Policy(bool efi, bool secure_boot, std::vector<std::string> keys,
                             const std::string& resmem_ko) {
  sim::ModulePolicySpec p;
  p.described = true;
  p.efi = efi;
  p.secure_boot = secure_boot;
  p.trusted_keys = std::move(keys);
  EXPECT_TRUE(sim::ParseModuleFileWord(resmem_ko, &p.resmem_ko)) << resmem_ko;
  return p;
}

DoctorReport DiagnoseSim(SimMachine& m, const DoctorOptions& options = {}) {
  auto r = Diagnose(*m.platform, m.regions.get(), options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : DoctorReport{};
}

const char* const kModuleFindings[] = {"modules-disabled", "module-signature-rejected",
                                       "lockdown-refuses-addresses", "secure-boot"};

TEST(DoctorModulePolicy, SecureBootRefusesDkmsKeyThatWasNeverEnrolled) {
  auto m = Boot("quiet memmap=64M$0x40000000",
                Policy(true, true, {"Debian Secure Boot CA"}, "signed:DKMS module signing key"));
  const DoctorReport r = DiagnoseSim(m);
  const Finding* f = Find(r, "module-signature-rejected");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->title.find("it is signed by 'DKMS module signing key', a key the kernel does not trust"),
            std::string::npos) << f->title;
  EXPECT_NE(f->title.find("and signatures are enforced (sig_enforce=Y, set by Secure Boot)"), std::string::npos)
      << f->title;
  EXPECT_NE(f->evidence.find("(kernel/module/signing.c module_sig_check: -EKEYREJECTED)"), std::string::npos);
  EXPECT_NE(f->evidence.find("/lib/modules/6.1.0-56-amd64/updates/dkms/resmem.ko: signed by 'DKMS module signing key' (sha256)"),
            std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("/proc/keys trusts Debian Secure Boot CA"), std::string::npos);
  EXPECT_NE(f->evidence.find("'Loading of module with unavailable key is rejected'"), std::string::npos);
  EXPECT_NE(f->evidence.find("Key was rejected by service"), std::string::npos);
  EXPECT_NE(f->remedy.find("mokutil --import /var/lib/dkms/mok.pub"), std::string::npos);
  EXPECT_NE(f->remedy.find("MokManager"), std::string::npos);
  EXPECT_NE(f->remedy.find("sign-file"), std::string::npos);
  EXPECT_EQ(f->seed, "");
  const Finding* l = Find(r, "lockdown-refuses-addresses");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->severity, "warning");
  EXPECT_NE(l->evidence.find("'resmem: `64M$0x40000000' invalid for parameter `ranges''"), std::string::npos)
      << l->evidence;
  EXPECT_NE(l->evidence.find("Lockdown: insmod: unsafe module parameters is restricted"), std::string::npos);
  EXPECT_NE(l->remedy.find("`modprobe resmem`"), std::string::npos);
  EXPECT_NE(l->remedy.find("here: memmap=64M$0x40000000"), std::string::npos) << l->remedy;
  const Finding* sb = Find(r, "secure-boot");
  ASSERT_NE(sb, nullptr);
  EXPECT_EQ(sb->severity, "info");
  EXPECT_NE(sb->title.find("locked down (integrity)"), std::string::npos);
  EXPECT_NE(sb->evidence.find("a key the kernel does not trust"), std::string::npos);
  EXPECT_EQ(Find(r, "modules-disabled"), nullptr);
  EXPECT_TRUE(r.has_errors());
  EXPECT_TRUE(r.devices.empty());  // the refused module made no device
  const auto& mp = r.facts.module_policy;
  EXPECT_TRUE(mp.decided);
  EXPECT_EQ(mp.load.err, EKEYREJECTED);
  const std::string json = DoctorJson(r);
  for (const char* want : {"\"module_policy\": {", "\"secure_boot\": \"enabled\"", "\"lockdown\": \"integrity\"",
                           "\"sig_enforce\": true", "\"signer\": \"DKMS module signing key\"",
                           "\"errno\": \"EKEYREJECTED\"", "\"refused_by\": \"sig_enforce\"",
                           "\"id\": \"module-signature-rejected\""})
    EXPECT_NE(json.find(want), std::string::npos) << want << "\n" << json;
  std::ostringstream text;
  RenderDoctor(r, text);
  EXPECT_NE(text.str().find("  module policy: Secure Boot: enabled; lockdown: integrity; sig_enforce: Y; "
                            "modules_disabled: 0; /proc/keys trusts Debian Secure Boot CA\n"),
            std::string::npos) << text.str();
  EXPECT_NE(text.str().find("  load: refused (EKEYREJECTED): insmod: ERROR: could not insert module resmem.ko: "
                            "Key was rejected by service\n"),
            std::string::npos) << text.str();
}

TEST(DoctorModulePolicy, TheEnrolledKeyLoadsAndOnlyLockdownRemains) {
  auto m = Boot("quiet memmap=64M$0x40000000",
                Policy(true, true, {"Debian Secure Boot CA", "DKMS module signing key"},
                       "signed:DKMS module signing key"));
  const DoctorReport r = DiagnoseSim(m);
  EXPECT_EQ(Find(r, "module-signature-rejected"), nullptr);
  EXPECT_NE(Find(r, "lockdown-refuses-addresses"), nullptr);
  ASSERT_NE(Find(r, "secure-boot"), nullptr);
  EXPECT_NE(Find(r, "secure-boot")->evidence.find("a key the kernel trusts"), std::string::npos);
  EXPECT_TRUE(r.facts.module_policy.load.loaded);
  EXPECT_FALSE(r.facts.module_policy.load.tainted);
  ASSERT_EQ(r.devices.size(), 1u);  // the driver came up
}

TEST(DoctorModulePolicy, ModulesDisabledAndALockdownOnTheCommandLineAreBothNamed) {
  auto p = Policy(false, false, {}, "unsigned");
  p.modules_disabled = true;
  auto m = Boot("lockdown=integrity memmap=64M$0x40000000", p);
  const DoctorReport r = DiagnoseSim(m);
  const Finding* d = Find(r, "modules-disabled");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, "error");
  EXPECT_NE(d->evidence.find("reads 1"), std::string::npos);
  EXPECT_NE(d->remedy.find("one-way"), std::string::npos);
  const Finding* s = Find(r, "module-signature-rejected");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->title.find("it is unsigned, and the kernel is locked down (integrity, by lockdown=integrity on "
                          "the command line)"),
            std::string::npos) << s->title;
  EXPECT_NE(s->evidence.find("Lockdown: insmod: unsigned module loading is restricted"), std::string::npos);
  EXPECT_NE(s->evidence.find("Operation not permitted"), std::string::npos);
  EXPECT_NE(s->remedy.find("lockdown= on the command line"), std::string::npos);
  EXPECT_NE(s->remedy.find("install the module through dkms"), std::string::npos);
  EXPECT_NE(Find(r, "lockdown-refuses-addresses"), nullptr);
  EXPECT_EQ(Find(r, "secure-boot"), nullptr);  // a legacy boot
  EXPECT_EQ(r.facts.module_policy.load.refused_by, "modules_disabled");
}

TEST(DoctorModulePolicy, SigEnforceOnTheCommandLineIsNamed) {
  auto m = Boot("module.sig_enforce=1 memmap=64M$0x40000000", Policy(true, false, {}, "unsigned"));
  const DoctorReport r = DiagnoseSim(m);
  const Finding* s = Find(r, "module-signature-rejected");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->title.find("set by module.sig_enforce=1 on the command line"), std::string::npos) << s->title;
  EXPECT_NE(s->evidence.find("'Loading of unsigned module is rejected'"), std::string::npos);
  EXPECT_NE(s->remedy.find("module.sig_enforce= on the command line enforces signatures too"), std::string::npos);
  EXPECT_EQ(Find(r, "lockdown-refuses-addresses"), nullptr);
  EXPECT_EQ(Find(r, "secure-boot"), nullptr);
}

TEST(DoctorModulePolicy, NoneOnAMachineWithoutThem) {
  // EFI without Secure Boot, a module signed by a key the kernel does not know: it loads
  // (tainted), and none of the four findings applies.
  auto m = Boot("quiet memmap=64M$0x40000000", Policy(true, false, {"Debian Secure Boot CA"},
                                                      "signed:DKMS module signing key"));
  const DoctorReport r = DiagnoseSim(m);
  for (const char* id : kModuleFindings) EXPECT_EQ(Find(r, id), nullptr) << id;
  EXPECT_TRUE(r.facts.module_policy.known);
  EXPECT_TRUE(r.facts.module_policy.load.loaded);
  EXPECT_TRUE(r.facts.module_policy.load.tainted);
  EXPECT_EQ(r.devices.size(), 1u);
  // A machine that does not describe its policy: nothing known, nothing claimed.
  auto plain = Boot("quiet memmap=64M$0x40000000", sim::ModulePolicySpec{});
  const DoctorReport p = DiagnoseSim(plain);
  for (const char* id : kModuleFindings) EXPECT_EQ(Find(p, id), nullptr) << id;
  EXPECT_FALSE(p.facts.module_policy.known);
  EXPECT_NE(DoctorJson(p).find("\"secure_boot\": null"), std::string::npos);
}

// Real machines' shapes, as texts: files absent for the reasons the kernel has, and what the
// doctor cannot tell.
std::map<std::string, std::string> PolicyFiles(const std::string& module_text) {
  auto files = Seed002("quiet memmap=64M$0x140000000", "00100000-bfffffff : System RAM\n");
  files[kModulesDisabledPath] = "0\n";
  files[kSigEnforcePath] = "Y\n";
  files[kSecureBootVarPath] = std::string("\x06\x00\x00\x00\x01", 5);
  files[kFwPlatformSizePath] = "64\n";
  files[kKeysPath] = "0c2e8d8c I------     1 perm 1f030000     0     0 asymmetri Debian Secure Boot CA: "
                     "6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa a7d9cc0f []\n";
  files["module-signature:resmem"] = module_text;
  return files;
}

TEST(DoctorModulePolicy, AbsentLockdownFileIsPredictedFromSecureBoot) {
  // securityfs not mounted: no lockdown file, yet Secure Boot locks Debian's kernel down.
  TextPlatform p(PolicyFiles("file: /lib/modules/x/updates/dkms/resmem.ko.xz\ncompression: xz\n"
                             "signed: yes\nsigner: DKMS module signing key\nhash: sha256\n"));
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  const auto& mp = r->facts.module_policy;
  EXPECT_EQ(mp.kernel.lockdown, LockdownLevel::kIntegrity);
  EXPECT_NE(mp.lockdown_source.find("is absent (securityfs not mounted?); predicted integrity"),
            std::string::npos) << mp.lockdown_source;
  ASSERT_NE(Find(*r, "module-signature-rejected"), nullptr);
  ASSERT_NE(Find(*r, "lockdown-refuses-addresses"), nullptr);
}

TEST(DoctorModulePolicy, WhatCannotBeToldIsSaidNotGuessed) {
  // /proc/keys read by a user who may view none of the keys: trust cannot be told.
  auto files = PolicyFiles("file: /x/resmem.ko\ncompression: none\nsigned: yes\nsigner: DKMS module signing key\nhash: sha256\n");
  files[kKeysPath] = "";
  TextPlatform p(files);
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->facts.module_policy.decided);
  EXPECT_EQ(Find(*r, "module-signature-rejected"), nullptr);
  ASSERT_NE(Find(*r, "secure-boot"), nullptr);
  EXPECT_NE(Find(*r, "secure-boot")->evidence.find("run as root"), std::string::npos);
  // EFI without a SecureBoot variable; a malformed signature is refused whatever the policy.
  auto efi = PolicyFiles("file: /x/resmem.ko\ncompression: none\nsigned: malformed\n"
                         "error: module signature: sig_len 9 does not fit (mod_check_sig: -EBADMSG)\n");
  efi.erase(kSecureBootVarPath);
  efi[kSigEnforcePath] = "N\n";
  efi[kLockdownPath] = "[none] integrity confidentiality\n";
  TextPlatform q(efi);
  auto e = Diagnose(q, nullptr);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->facts.module_policy.secure_boot, SecureBootState::kEfiNoVariable);
  const Finding* bad = Find(*e, "module-signature-rejected");
  ASSERT_NE(bad, nullptr);
  EXPECT_NE(bad->title.find("malformed signature"), std::string::npos) << bad->title;
  EXPECT_NE(bad->remedy.find("re-sign the module"), std::string::npos);
  EXPECT_EQ(Find(*e, "secure-boot"), nullptr);
  EXPECT_EQ(Find(*e, "lockdown-refuses-addresses"), nullptr);
}

TEST(DoctorModulePolicy, ModuleOptionChecksThatFile) {
  auto files = PolicyFiles("file: /lib/modules/x/updates/dkms/resmem.ko\ncompression: none\nsigned: no\n");
  files[kLockdownPath] = "none [integrity] confidentiality\n";
  files["module-signature:/home/me/resmem.ko"] =
      "file: /home/me/resmem.ko\ncompression: none\nsigned: yes\nsigner: Debian Secure Boot CA\nhash: sha256\n";
  TextPlatform p(files);
  DoctorOptions options;
  options.module = "/home/me/resmem.ko";
  auto r = Diagnose(p, nullptr, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->facts.module_policy.module.file, "/home/me/resmem.ko");
  EXPECT_EQ(Find(*r, "module-signature-rejected"), nullptr);  // signed by a trusted key
  auto installed = Diagnose(p, nullptr);
  ASSERT_TRUE(installed.ok());
  EXPECT_NE(Find(*installed, "module-signature-rejected"), nullptr);  // the installed one is unsigned
}

// The GPU machine as `resmem doctor` read it there (H200, kernel 6.18.44, Firecracker guest,
// 2026-11-28): modules disabled, sig_enforce Y without Secure Boot (its kernel's configuration),
// no lockdown file, no EFI, one built-in key, no resmem.ko.
TEST(DoctorModulePolicy, TheGpuMachineAsReadThere) {
  auto files = Seed002("console=ttyS0 quiet", "00100000-bfffffff : System RAM\n");
  files[kModulesDisabledPath] = "1\n";
  files[kSigEnforcePath] = "Y\n";
  files[kKeysPath] = "3293329b I------     1 perm 1f030000     0     0 asymmetri Build time autogenerated "
                     "kernel key: 6f10b6599c33c41bb00e50d68af8f0ab7e6b37ff: X509.rsa 7e6b37ff []\n";
  TextPlatform p(files);  // module-signature:resmem absent: ENOENT, as on a machine without it
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  const auto& mp = r->facts.module_policy;
  EXPECT_TRUE(mp.known);
  EXPECT_EQ(mp.secure_boot, SecureBootState::kNotEfi);
  EXPECT_TRUE(mp.kernel.sig_enforce);
  EXPECT_EQ(mp.kernel.sig_enforce_by, "this kernel's configuration");
  EXPECT_FALSE(mp.kernel.lockdown_lsm);
  EXPECT_TRUE(mp.module_absent);
  EXPECT_EQ(mp.load.refused_by, "absent");
  ASSERT_NE(Find(*r, "modules-disabled"), nullptr);
  for (const char* id : {"module-signature-rejected", "lockdown-refuses-addresses", "secure-boot"})
    EXPECT_EQ(Find(*r, id), nullptr) << id;
}

}  // namespace
}  // namespace resmem::engine
