// The kernel's reading of the IOMMU options (Linux 6.1, Debian's configuration) and the sysfs
// texts the simulator renders from it. Each case names the kernel function whose rule it checks.
#include "mock/machine/iommu.h"

#include <gtest/gtest.h>

#include "backends/platform/proc_parsers.h"

namespace resmem::sim {
namespace {

IommuSpec Hw(IommuVendor v, std::vector<std::string> devices = {"0000:00:00.0", "0000:00:10.0"}) {
  IommuSpec s;
  s.described = true;
  s.vendor = v;
  s.devices = std::move(devices);
  return s;
}
LinuxRules Rules(const std::string& version) { return LinuxRulesFor(version).value(); }

const IommuSpec kIntel = Hw(IommuVendor::kIntel), kAmd = Hw(IommuVendor::kAmd),
                kNone = Hw(IommuVendor::kNone);

const IommuOptionOutcome* Find(const IommuKernel& k, const std::string& key, const std::string& item) {
  for (const auto& o : k.options)
    if (o.key == key && o.item == item) return &o;
  return nullptr;
}

TEST(IommuRules, DebianTurnsVtdOnByDefault) {
  // Debian's 6.1: CONFIG_INTEL_IOMMU_DEFAULT_ON_INTGPU_OFF=y, dmar_disabled =
  // IS_ENABLED(CONFIG_INTEL_IOMMU_DEFAULT_OFF) = 0: on wherever there is a DMAR table. The
  // default domain is translated and lazy (CONFIG_IOMMU_DEFAULT_DMA_LAZY): DMA-FQ.
  auto deflt = ReadIommuOptions("console=ttyS0", kIntel);
  EXPECT_EQ(deflt.active, IommuVendor::kIntel);
  EXPECT_EQ(deflt.default_domain, IommuDomainType::kDmaFq);
  EXPECT_FALSE(deflt.domain_from_cmdline);
  EXPECT_NE(deflt.why.find("INTGPU_OFF"), std::string::npos) << deflt.why;
  EXPECT_TRUE(deflt.options.empty());
  // intel_iommu_setup "on": dmar_disabled = 0, "DMAR: IOMMU enabled".
  auto on = ReadIommuOptions("console=ttyS0 intel_iommu=on", kIntel);
  EXPECT_TRUE(on.on());
  ASSERT_EQ(on.options.size(), 1u);
  EXPECT_EQ(on.options[0].problem, IommuOptionProblem::kNone);
  EXPECT_EQ(on.options[0].dmesg, "DMAR: IOMMU enabled");
  EXPECT_FALSE(ReadIommuOptions("intel_iommu=off", kIntel).on());
  // A kernel built with VT-d off by default needs intel_iommu=on.
  IommuSpec default_off = kIntel;
  default_off.intel_default_on = false;
  auto off = ReadIommuOptions("", default_off);
  EXPECT_FALSE(off.on());
  EXPECT_NE(off.why.find("intel_iommu=on"), std::string::npos) << off.why;
  EXPECT_TRUE(ReadIommuOptions("intel_iommu=on", default_off).on());
  // parameq: '-' and '_' are one character in a name.
  EXPECT_TRUE(ReadIommuOptions("intel-iommu=on", default_off).on());
  // strncmp prefixes: "onboard" reads as "on".
  EXPECT_TRUE(ReadIommuOptions("intel_iommu=onboard", default_off).on());
  // Last one wins.
  EXPECT_FALSE(ReadIommuOptions("intel_iommu=on intel_iommu=off", kIntel).on());
  EXPECT_TRUE(ReadIommuOptions("intel_iommu=off intel_iommu=on", kIntel).on());
  // Debian's intgpu_off item is known.
  EXPECT_EQ(ReadIommuOptions("intel_iommu=intgpu_off", kIntel).options[0].problem,
            IommuOptionProblem::kNone);
}

TEST(IommuRules, AmdIsOnWhereverTheFirmwareHasIvrs) {
  auto k = ReadIommuOptions("quiet", kAmd);
  EXPECT_EQ(k.active, IommuVendor::kAmd);
  EXPECT_EQ(k.default_domain, IommuDomainType::kDmaFq);
  EXPECT_FALSE(ReadIommuOptions("amd_iommu=off", kAmd).on());
  // amd_iommu=on is no item parse_amd_iommu_options knows: a notice, and AMD-Vi is on anyway.
  auto on = ReadIommuOptions("amd_iommu=on", kAmd);
  EXPECT_TRUE(on.on());
  ASSERT_EQ(on.options.size(), 1u);
  EXPECT_EQ(on.options[0].problem, IommuOptionProblem::kUnknownValue);
  EXPECT_EQ(on.options[0].dmesg, "AMD-Vi: Unknown option - 'on'");
  // fullflush: deprecated, strict.
  auto ff = ReadIommuOptions("amd_iommu=fullflush", kAmd);
  EXPECT_EQ(ff.default_domain, IommuDomainType::kDma);
  EXPECT_EQ(ff.options[0].problem, IommuOptionProblem::kDeprecated);
}

TEST(IommuRules, IommuOnIsSilentlyIgnored) {
  // arch/x86/kernel/pci-dma.c iommu_setup compares each item with its words and says nothing
  // about the rest: iommu=on turns nothing on.
  IommuSpec default_off = kIntel;
  default_off.intel_default_on = false;
  auto k = ReadIommuOptions("iommu=on", default_off);
  EXPECT_FALSE(k.on());
  ASSERT_EQ(k.options.size(), 1u);
  EXPECT_EQ(k.options[0].problem, IommuOptionProblem::kSilentlyIgnored);
  EXPECT_TRUE(k.options[0].dmesg.empty());
  EXPECT_EQ(ReadIommuOptions("iommu=yes", kIntel).options[0].problem,
            IommuOptionProblem::kSilentlyIgnored);
  // A leading digit is gart_parse_options' aperture size: taken, not about remapping.
  EXPECT_EQ(ReadIommuOptions("iommu=1", kIntel).options[0].problem, IommuOptionProblem::kNone);
  EXPECT_EQ(ReadIommuOptions("iommu=", kIntel).options[0].problem,
            IommuOptionProblem::kSilentlyIgnored);
  // No value at all: iommu_setup(NULL) is -EINVAL, do_early_param prints "Malformed".
  auto bare = ReadIommuOptions("iommu", kIntel);
  ASSERT_EQ(bare.options.size(), 1u);
  EXPECT_EQ(bare.options[0].problem, IommuOptionProblem::kMalformed);
  EXPECT_EQ(bare.options[0].dmesg, "Malformed early option 'iommu'");
  // Known words that do not concern remapping are taken quietly.
  EXPECT_EQ(ReadIommuOptions("iommu=soft", kIntel).options[0].problem, IommuOptionProblem::kNone);
  EXPECT_EQ(ReadIommuOptions("iommu=noagp", kIntel).options[0].problem, IommuOptionProblem::kNone);
}

TEST(IommuRules, IntelUnknownItemsAndMissingEquals) {
  IommuSpec default_off = kIntel;
  default_off.intel_default_on = false;
  auto one = ReadIommuOptions("intel_iommu=1", default_off);
  EXPECT_FALSE(one.on());
  EXPECT_EQ(one.options[0].problem, IommuOptionProblem::kUnknownValue);
  EXPECT_EQ(one.options[0].dmesg, "DMAR: Unknown option - '1'");
  // A leading comma: the item is compared from there (unknown, the rest printed), then the
  // commas are skipped and "on" is read.
  auto comma = ReadIommuOptions("intel_iommu=,on", default_off);
  EXPECT_TRUE(comma.on());
  ASSERT_EQ(comma.options.size(), 2u);
  EXPECT_EQ(comma.options[0].dmesg, "DMAR: Unknown option - ',on'");
  // Without '=' the __setup "intel_iommu=" does not match: the word goes to init.
  auto bare = ReadIommuOptions("intel_iommu", default_off);
  EXPECT_FALSE(bare.on());
  ASSERT_EQ(bare.options.size(), 1u);
  EXPECT_EQ(bare.options[0].problem, IommuOptionProblem::kNotAParameter);
  EXPECT_NE(bare.options[0].effect.find("Unknown kernel command line parameters"), std::string::npos);
  EXPECT_TRUE(bare.options[0].dmesg.empty());
  // A name the kernel does not have.
  EXPECT_EQ(ReadIommuOptions("iommu_passthrough=1", kIntel).options[0].problem,
            IommuOptionProblem::kNotAParameter);
  // Parameters about other IOMMU matters are left alone.
  EXPECT_TRUE(ReadIommuOptions("amd_iommu_dump ivrs_ioapic=4@00:14.0 vfio_iommu_type1.x=1", kAmd)
                  .options.empty());
  // strict is taken with a deprecation line, and makes translated domains DMA.
  auto strict = ReadIommuOptions("intel_iommu=on,strict", kIntel);
  EXPECT_EQ(strict.default_domain, IommuDomainType::kDma);
  ASSERT_NE(Find(strict, "intel_iommu", "strict"), nullptr);
  EXPECT_EQ(Find(strict, "intel_iommu", "strict")->problem, IommuOptionProblem::kDeprecated);
}

TEST(IommuRules, PassthroughAndStrictAreKstrtobool) {
  auto pt = ReadIommuOptions("intel_iommu=on iommu=pt", kIntel);
  EXPECT_TRUE(pt.on());
  EXPECT_EQ(pt.default_domain, IommuDomainType::kIdentity);
  EXPECT_TRUE(pt.domain_from_cmdline);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=1", kIntel).default_domain,
            IommuDomainType::kIdentity);
  // kstrtobool reads the first character: "yes" is true, "on" true, "off" false, and "true" true
  // (the lane's 6.1 kernel: identity domains, no "Malformed early option").
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=yes", kIntel).default_domain,
            IommuDomainType::kIdentity);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=off", kIntel).default_domain,
            IommuDomainType::kDmaFq);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=true", kIntel).default_domain,
            IommuDomainType::kIdentity);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=false", kIntel).default_domain,
            IommuDomainType::kDmaFq);
  // "enable" starts with 'e': -EINVAL, "Malformed early option", the default stays translated.
  auto bad = ReadIommuOptions("intel_iommu=on iommu.passthrough=enable", kIntel);
  EXPECT_EQ(bad.default_domain, IommuDomainType::kDmaFq);
  ASSERT_NE(Find(bad, "iommu.passthrough", "enable"), nullptr);
  EXPECT_EQ(Find(bad, "iommu.passthrough", "enable")->problem, IommuOptionProblem::kMalformed);
  EXPECT_EQ(Find(bad, "iommu.passthrough", "enable")->dmesg,
            "Malformed early option 'iommu.passthrough'");
  // From 6.15 kstrtobool takes enable/disable by e/d (linux_rules.h): 6.12.117 refused both in
  // the QEMU lane, 7.3.4 took enable as identity domains, disable as translated ones.
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=enable", kIntel, Rules("6.12.117"))
                .options[1].problem,
            IommuOptionProblem::kMalformed);
  auto enable = ReadIommuOptions("intel_iommu=on iommu.passthrough=enable", kIntel,
                                 Rules("7.3.4+deb13-amd64"));
  EXPECT_EQ(enable.default_domain, IommuDomainType::kIdentity);
  EXPECT_TRUE(enable.domain_from_cmdline);
  EXPECT_TRUE(enable.dmesg.size() == 1 && enable.dmesg[0] == "DMAR: IOMMU enabled");
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=Disable", kIntel, Rules("7.3.4"))
                .default_domain,
            IommuDomainType::kDmaFq);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.passthrough=x", kIntel, Rules("7.3.4"))
                .options[1].problem,
            IommuOptionProblem::kMalformed);
  // The last of pt, nopt and iommu.passthrough wins.
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu=pt iommu.passthrough=0", kIntel).default_domain,
            IommuDomainType::kDmaFq);
  EXPECT_EQ(ReadIommuOptions("intel_iommu=on iommu.strict=1", kIntel).default_domain,
            IommuDomainType::kDma);
}

TEST(IommuRules, NoEffectWhereNothingActsOnTheOption) {
  // No DMAR table (VT-d off in the firmware setup): intel_iommu=on is taken and does nothing.
  auto fw = ReadIommuOptions("intel_iommu=on", kNone);
  EXPECT_FALSE(fw.on());
  EXPECT_NE(fw.why.find("no DMAR or IVRS table"), std::string::npos);
  EXPECT_EQ(fw.options[0].problem, IommuOptionProblem::kNoEffect);
  // intel_iommu=on on an AMD machine: AMD-Vi is on, the Intel option touches nothing.
  auto amd = ReadIommuOptions("intel_iommu=on", kAmd);
  EXPECT_TRUE(amd.on());
  EXPECT_EQ(amd.options[0].problem, IommuOptionProblem::kNoEffect);
  // iommu=off wins over intel_iommu=on; the pt after it has no domain to set.
  auto off = ReadIommuOptions("intel_iommu=on iommu=pt,,off", kIntel);
  EXPECT_FALSE(off.on());
  EXPECT_NE(off.why.find("iommu=pt,,off"), std::string::npos) << off.why;
  EXPECT_EQ(Find(off, "intel_iommu", "on")->problem, IommuOptionProblem::kNoEffect);
  EXPECT_EQ(Find(off, "iommu", "pt")->problem, IommuOptionProblem::kNoEffect);
  EXPECT_EQ(Find(off, "iommu", "off")->problem, IommuOptionProblem::kNone);
  // iommu=usedac returns 1: "Malformed early option" and the items after it are not read.
  auto dac = ReadIommuOptions("intel_iommu=on iommu=usedac,off", kIntel);
  EXPECT_TRUE(dac.on());
  EXPECT_EQ(Find(dac, "iommu", "usedac")->dmesg, "Malformed early option 'iommu'");
  EXPECT_EQ(Find(dac, "iommu", "off")->problem, IommuOptionProblem::kSilentlyIgnored);
  // The kernel's lines in its order: early parameters (do_early_param) before the __setup ones.
  auto lines = ReadIommuOptions("intel_iommu=on,bogus iommu.passthrough=enable amd_iommu=on", kIntel);
  EXPECT_EQ(lines.dmesg, (std::vector<std::string>{"Malformed early option 'iommu.passthrough'",
                                                   "DMAR: IOMMU enabled",
                                                   "DMAR: Unknown option - 'bogus'",
                                                   "AMD-Vi: Unknown option - 'on'"}));
  // After "--" nothing is a kernel parameter; outcomes stay in line order.
  IommuSpec default_off = kIntel;
  default_off.intel_default_on = false;
  auto dash = ReadIommuOptions("iommu=pt -- intel_iommu=on", default_off);
  EXPECT_FALSE(dash.on());
  ASSERT_EQ(dash.options.size(), 2u);
  EXPECT_EQ(dash.options[0].key, "iommu");
  EXPECT_EQ(dash.options[1].problem, IommuOptionProblem::kAfterDashDash);
}

TEST(IommuRender, SysfsFollowsTheKernel) {
  IommuSpec hw = Hw(IommuVendor::kIntel, {"0000:00:00.0", "0000:00:02.0", "0000:00:10.0"});
  hw.units = 2;
  const auto on = ReadIommuOptions("intel_iommu=on", hw);
  EXPECT_EQ(RenderIommuUnits(hw, on), "dmar0: 0000:00:00.0 0000:00:10.0\ndmar1: 0000:00:02.0\n");
  EXPECT_EQ(RenderIommuGroups(hw, on),
            "0 DMA-FQ 0000:00:00.0\n1 DMA-FQ 0000:00:02.0\n2 DMA-FQ 0000:00:10.0\n");
  EXPECT_EQ(RenderIommuGroups(hw, ReadIommuOptions("intel_iommu=on iommu=pt", hw)).substr(0, 10),
            "0 identity");
  // Off: the folders exist and are empty.
  const auto off = ReadIommuOptions("intel_iommu=off", hw);
  EXPECT_EQ(RenderIommuUnits(hw, off), "");
  EXPECT_EQ(RenderIommuGroups(hw, off), "");
  EXPECT_EQ(RenderAcpiTables(hw), "APIC\nDMAR\nDSDT\nFACP\nHPET\nMCFG\n");
  EXPECT_EQ(RenderAcpiTables(kAmd), "APIC\nDSDT\nFACP\nHPET\nIVRS\nMCFG\n");
  EXPECT_EQ(RenderIommuUnits(kAmd, ReadIommuOptions("", kAmd)),
            "ivhd0: 0000:00:00.0 0000:00:10.0\n");
  // The texts read back through the doctor's parsers.
  auto units = ParseIommuUnits(RenderIommuUnits(hw, on));
  ASSERT_TRUE(units.ok());
  EXPECT_EQ((*units)[1].devices, std::vector<std::string>{"0000:00:02.0"});
  auto groups = ParseIommuGroups(RenderIommuGroups(hw, on));
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ((*groups)[2].type, IommuDomainType::kDmaFq);
}

}  // namespace
}  // namespace resmem::sim
