// The kernel's reading of the IOMMU options, and the sysfs texts it leads to (iommu.h names the
// sources; each rule below says which function it follows).
#include "mock/machine/iommu.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

#include "mock/machine/cmdline.h"

namespace resmem::sim {
namespace {

// kernel/params.c parameq(): '-' and '_' are the same in a parameter's name.
std::string Canonical(const std::string& key) {
  std::string k = key;
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

bool StartsWith(const std::string& s, const char* word) {
  return s.compare(0, std::strlen(word), word) == 0;  // strncmp(s, word, strlen(word)) == 0
}

// lib/kstrtox.c kstrtobool(): the first character decides (y Y t T 1 true, n N f F 0 false,
// and on kernels with LinuxRules::kstrtobool_enable_disable e E true, d D false), "on"/"off" by
// the second; anything else (and no value at all) is -EINVAL. The t/f letters were first missing
// here; the QEMU lane's 6.1 kernel took iommu.passthrough=true as true (identity domains, no
// "Malformed early option"), which is how the model learned them; its 7.3 kernel taught e/d.
std::optional<bool> KstrToBool(const std::string& s, bool has_value, bool enable_disable) {
  if (!has_value || s.empty()) return std::nullopt;
  if (enable_disable && (s[0] == 'e' || s[0] == 'E')) return true;
  if (enable_disable && (s[0] == 'd' || s[0] == 'D')) return false;
  switch (s[0]) {
    case 'y': case 'Y': case 't': case 'T': case '1': return true;
    case 'n': case 'N': case 'f': case 'F': case '0': return false;
    case 'o': case 'O':
      if (s.size() > 1 && (s[1] == 'n' || s[1] == 'N')) return true;
      if (s.size() > 1 && (s[1] == 'f' || s[1] == 'F')) return false;
      return std::nullopt;
    default: return std::nullopt;
  }
}

// The state the options set, named after the kernel's variables.
struct State {
  bool no_iommu = false;       // pci-dma.c, iommu=off
  bool dmar_disabled = false;  // intel/iommu.c, Debian: IS_ENABLED(CONFIG_INTEL_IOMMU_DEFAULT_OFF)
  bool amd_disabled = false;   // amd/init.c amd_iommu_disabled, amd_iommu=off
  bool strict = false;         // iommu.c iommu_dma_strict: IS_ENABLED(CONFIG_IOMMU_DEFAULT_DMA_STRICT)
  std::optional<bool> passthrough;  // set on the command line (IOMMU_CMD_LINE_DMA_API)
  // Which outcome set each, for "no effect" and the why.
  int no_iommu_by = -1, dmar_by = -1, amd_off_by = -1, passthrough_by = -1;
};

// One comma-separated pass as intel_iommu_setup and parse_amd_iommu_options walk their value:
// the item at p is compared by prefix with the rest of the string, then p skips to the next
// comma and over every comma after it. `rest` is what an "Unknown option" line prints.
template <typename Fn>
void WalkItems(const std::string& value, Fn fn) {
  size_t p = 0;
  while (p < value.size()) {
    const size_t comma = value.find(',', p);
    const size_t end = comma == std::string::npos ? value.size() : comma;
    fn(value.substr(p, end - p), value.substr(p));
    p = end;
    while (p < value.size() && value[p] == ',') ++p;
  }
}

struct Reader {
  State st;
  std::vector<IommuOptionOutcome> out;
  bool enable_disable = false;  // LinuxRules::kstrtobool_enable_disable

  IommuOptionOutcome Base(const KernelOption& o, const std::string& key, const std::string& item) {
    IommuOptionOutcome r;
    r.option = o.raw;
    r.key = key;
    r.item = item;
    return r;
  }

  // arch/x86/kernel/pci-dma.c iommu_setup(): every item is compared with each word in turn (no
  // else: "force" also matches "forcesac"), then gart_parse_options() (arch/x86/kernel/
  // amd_gart_64.c) looks at it; what matches nothing is skipped without a message. p moves past
  // one comma only. "usedac" returns 1 at once, so do_early_param prints "Malformed early
  // option" and the items after it are not read. No value: -EINVAL, "Malformed early option".
  void Iommu(const KernelOption& o) {
    if (!o.has_value || o.value.empty()) {
      auto r = Base(o, "iommu", "");
      r.problem = o.has_value ? IommuOptionProblem::kSilentlyIgnored : IommuOptionProblem::kMalformed;
      r.effect = o.has_value ? "an empty value: iommu_setup reads no item and changes nothing"
                             : "no value: iommu_setup(NULL) returns -EINVAL and sets nothing";
      if (!o.has_value) r.dmesg = "Malformed early option 'iommu'";
      out.push_back(r);
      return;
    }
    const std::string& v = o.value;
    bool stopped = false;
    for (size_t p = 0; p < v.size();) {
      size_t end = v.find(',', p);
      if (end == std::string::npos) end = v.size();
      const std::string rest = v.substr(p), item = v.substr(p, end - p);
      p = end + 1;  // p += strcspn(p, ","); if (*p == ',') ++p;
      if (item.empty()) continue;  // matches no word: skipped
      auto r = Base(o, "iommu", item);
      if (stopped) {
        r.problem = IommuOptionProblem::kSilentlyIgnored;
        r.effect = "not read: iommu_setup returned at 'usedac' before it";
      } else if (StartsWith(rest, "off")) {
        st.no_iommu = true;
        st.no_iommu_by = static_cast<int>(out.size());
        r.effect = "no_iommu = 1: no IOMMU driver starts (intel_iommu_init and amd_iommu_detect "
                   "return when no_iommu is set)";
      } else if (StartsWith(rest, "nopt")) {
        st.passthrough = false;
        st.passthrough_by = static_cast<int>(out.size());
        r.effect = "default domain translated, set on the command line "
                   "(iommu_set_default_translated)";
      } else if (StartsWith(rest, "pt")) {
        st.passthrough = true;
        st.passthrough_by = static_cast<int>(out.size());
        r.effect = "default domain identity, set on the command line "
                   "(iommu_set_default_passthrough): devices use physical addresses";
      } else if (StartsWith(rest, "usedac")) {
        r.effect = "disable_dac_quirks; iommu_setup returns 1 here, so the items after it are "
                   "not read";
        r.dmesg = "Malformed early option 'iommu'";
        stopped = true;
      } else if (StartsWith(rest, "soft")) {
        r.effect = "swiotlb forced on; no bearing on a remapping IOMMU";
      } else {
        static const char* const kOther[] = {"force", "noforce", "biomerge", "panic", "nopanic",
                                             "merge", "nomerge", "forcesac", "allowdac", "nodac",
                                             // gart_parse_options
                                             "fullflush", "nofullflush", "noagp", "noaperture",
                                             "allowed", "memaper"};
        bool known = std::isdigit(static_cast<unsigned char>(rest[0])) != 0;
        for (const char* w : kOther) known = known || StartsWith(rest, w);
        if (known) {
          r.effect = "a DMA-mapping or GART setting; no bearing on a remapping IOMMU";
        } else {
          r.problem = IommuOptionProblem::kSilentlyIgnored;
          r.effect = "iommu_setup (arch/x86/kernel/pci-dma.c) knows off, pt, nopt, soft, force, "
                     "merge, panic and GART words; it skips '" + item +
                     "' without a message, so it turns nothing on or off";
        }
      }
      out.push_back(r);
    }
  }

  // drivers/iommu/intel/iommu.c intel_iommu_setup() (pr_fmt "DMAR: ").
  void Intel(const KernelOption& o) {
    if (o.value.empty()) {
      auto r = Base(o, "intel_iommu", "");
      r.problem = IommuOptionProblem::kSilentlyIgnored;
      r.effect = "an empty value: intel_iommu_setup reads no item and changes nothing";
      out.push_back(r);
      return;
    }
    WalkItems(o.value, [&](const std::string& item, const std::string& rest) {
      auto r = Base(o, "intel_iommu", item);
      if (StartsWith(rest, "on")) {
        st.dmar_disabled = false;
        st.dmar_by = static_cast<int>(out.size());
        r.effect = "dmar_disabled = 0: VT-d DMA remapping requested";
        r.dmesg = "DMAR: IOMMU enabled";
      } else if (StartsWith(rest, "off")) {
        st.dmar_disabled = true;
        st.dmar_by = static_cast<int>(out.size());
        r.effect = "dmar_disabled = 1: VT-d DMA remapping off";
        r.dmesg = "DMAR: IOMMU disabled";
      } else if (StartsWith(rest, "igfx_off")) {
        r.effect = "graphics devices left unmapped";
        r.dmesg = "DMAR: Disable GFX device mapping";
      } else if (StartsWith(rest, "intgpu_off")) {
        r.effect = "the integrated GPU left unmapped (Debian's item)";
        r.dmesg = "DMAR: Disable integrated GPU device mapping";
      } else if (StartsWith(rest, "forcedac")) {
        r.problem = IommuOptionProblem::kDeprecated;
        r.effect = "IOVAs above 4 GiB first; deprecated";
        r.dmesg = "DMAR: intel_iommu=forcedac deprecated; use iommu.forcedac instead";
      } else if (StartsWith(rest, "strict")) {
        st.strict = true;
        r.problem = IommuOptionProblem::kDeprecated;
        r.effect = "strict IOTLB flushing (DMA, not DMA-FQ); deprecated";
        r.dmesg = "DMAR: intel_iommu=strict deprecated; use iommu.strict=1 instead";
      } else if (StartsWith(rest, "sp_off")) {
        r.effect = "no superpages in the IOMMU's page tables";
        r.dmesg = "DMAR: Disable supported super page";
      } else if (StartsWith(rest, "sm_on")) {
        r.effect = "scalable mode where the hardware has it";
        r.dmesg = "DMAR: Enable scalable mode if hardware supports";
      } else if (StartsWith(rest, "sm_off")) {
        r.effect = "scalable mode disallowed";
        r.dmesg = "DMAR: Scalable mode is disallowed";
      } else if (StartsWith(rest, "tboot_noforce")) {
        r.effect = "VT-d not forced on after tboot";
      } else {
        r.problem = IommuOptionProblem::kUnknownValue;
        r.effect = "intel_iommu_setup knows on, off, igfx_off, intgpu_off (Debian), forcedac, "
                   "strict, sp_off, sm_on, sm_off and tboot_noforce; '" + item + "' changes nothing";
        r.dmesg = "DMAR: Unknown option - '" + rest + "'";
      }
      out.push_back(r);
    });
  }

  // drivers/iommu/amd/init.c parse_amd_iommu_options() (pr_fmt "AMD-Vi: "), 6.1's items.
  void Amd(const KernelOption& o) {
    if (o.value.empty()) {
      auto r = Base(o, "amd_iommu", "");
      r.problem = IommuOptionProblem::kSilentlyIgnored;
      r.effect = "an empty value: parse_amd_iommu_options reads no item and changes nothing";
      out.push_back(r);
      return;
    }
    WalkItems(o.value, [&](const std::string& item, const std::string& rest) {
      auto r = Base(o, "amd_iommu", item);
      if (StartsWith(rest, "fullflush")) {
        st.strict = true;
        r.problem = IommuOptionProblem::kDeprecated;
        r.effect = "strict IOTLB flushing (DMA, not DMA-FQ); deprecated";
        r.dmesg = "AMD-Vi: amd_iommu=fullflush deprecated; use iommu.strict=1 instead";
      } else if (StartsWith(rest, "force_enable")) {
        r.effect = "AMD-Vi enabled despite known-bad integrated graphics";
      } else if (StartsWith(rest, "off")) {
        st.amd_disabled = true;
        st.amd_off_by = static_cast<int>(out.size());
        r.effect = "amd_iommu_disabled: AMD-Vi not initialised";
      } else if (StartsWith(rest, "force_isolation")) {
        r.effect = "every device isolated in its own domain";
      } else if (StartsWith(rest, "pgtbl_v1") || StartsWith(rest, "pgtbl_v2")) {
        r.effect = "page-table format for the DMA API";
      } else {
        r.problem = IommuOptionProblem::kUnknownValue;
        r.effect = "parse_amd_iommu_options knows fullflush, force_enable, off, force_isolation, "
                   "pgtbl_v1 and pgtbl_v2; '" + item + "' changes nothing (AMD-Vi is on by "
                   "default wherever the firmware has an IVRS table)";
        r.dmesg = "AMD-Vi: Unknown option - '" + rest + "'";
      }
      out.push_back(r);
    });
  }

  // drivers/iommu/iommu.c iommu_set_def_domain_type / iommu_dma_setup: kstrtobool, and
  // do_early_param's "Malformed early option" when it fails.
  void Bool(const KernelOption& o, const std::string& key) {
    auto r = Base(o, key, o.value);
    const auto b = KstrToBool(o.value, o.has_value, enable_disable);
    if (!b) {
      r.problem = IommuOptionProblem::kMalformed;
      r.effect = (o.has_value ? "'" + o.value + "' is" : std::string("no value is")) +
                 " not a boolean to kstrtobool (y/n, t/f, 1/0, on/off" +
                 (enable_disable ? ", enable/disable" : "") +
                 " by their first letters): -EINVAL, nothing set";
      r.dmesg = "Malformed early option '" + key + "'";
    } else if (key == "iommu.passthrough") {
      st.passthrough = *b;
      st.passthrough_by = static_cast<int>(out.size());
      r.effect = *b ? "default domain identity, set on the command line"
                    : "default domain translated, set on the command line";
    } else {
      st.strict = *b;
      r.effect = *b ? "strict IOTLB flushing: translated domains are DMA, not DMA-FQ"
                    : "lazy IOTLB flushing: translated domains are DMA-FQ";
    }
    out.push_back(r);
  }
};

// Parameters the kernel knows whose names mention the IOMMU but that do not decide whether it
// translates (documented in kernel-parameters.txt): left alone.
bool OtherKnownIommuParameter(const std::string& key) {
  static const char* const kKnown[] = {"amd_iommu_dump", "amd_iommu_intr", "ivrs_ioapic",
                                       "ivrs_hpet", "ivrs_acpihid"};
  for (const char* k : kKnown)
    if (key == k || StartsWith(key, (std::string(k) + "[").c_str())) return true;
  return false;
}

// Reads every IOMMU option of `cmdline` into rd.out, in the kernel's reading order: early
// parameters (iommu=, iommu.passthrough=, iommu.strict=) first, in line order (init/main.c
// parse_early_param), the __setup ones (intel_iommu=, amd_iommu=) later, in parse_args. Returns
// each outcome's position on the command line (the index of its option).
std::vector<int> ReadInKernelOrder(const std::string& cmdline, Reader& rd) {
  const auto options = SplitKernelCmdline(cmdline);
  std::vector<int> position;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < options.size(); ++i) {
      const KernelOption& o = options[i];
      const std::string key = Canonical(o.key);
      const bool early = key == "iommu" || key == "iommu.passthrough" || key == "iommu.strict";
      const bool setup = key == "intel_iommu" || key == "amd_iommu";
      const bool stray = !early && !setup && key.find("iommu") != std::string::npos &&
                         key.find('.') == std::string::npos && !OtherKnownIommuParameter(key);
      if (!(early || setup || stray) || (pass == 0) != early) continue;
      if (o.after_dashdash) {
        auto r = rd.Base(o, key, o.value);
        r.problem = IommuOptionProblem::kAfterDashDash;
        r.effect = "after \"--\": an argument of init, never read by the kernel "
                   "(kernel/params.c parse_args stops there)";
        rd.out.push_back(r);
      } else if (stray || (setup && !o.has_value)) {
        // obsolete_checksetup matches "intel_iommu=" only with its '='; unknown_bootoption then
        // hands the word to init (as an argument, or with '=' as an environment variable).
        auto r = rd.Base(o, key, o.value);
        r.problem = IommuOptionProblem::kNotAParameter;
        // The kernel names it in one line with every other unknown word (print_unknown_bootoptions:
        // "Unknown kernel command line parameters \"...\", will be passed to user space."),
        // which is not this option's own line.
        r.effect = (stray ? std::string("no kernel parameter has this name: it goes to init")
                          : "without '=' no parameter matches (the kernel's is \"" + key +
                                "=\"): the word goes to init") +
                   ", and the kernel lists it among the \"Unknown kernel command line parameters\"";
        rd.out.push_back(r);
      } else if (key == "iommu") {
        rd.Iommu(o);
      } else if (key == "intel_iommu") {
        rd.Intel(o);
      } else if (key == "amd_iommu") {
        rd.Amd(o);
      } else {
        rd.Bool(o, key);
      }
      position.resize(rd.out.size(), static_cast<int>(i));
    }
  }
  return position;
}

// The option text of the outcome read `reading_index`-th ("" for none: -1).
std::string OptionRead(const Reader& rd, int reading_index) {
  return reading_index < 0 ? std::string() : rd.out[reading_index].option;
}

// Which driver starts, into k.active and k.why: Intel's needs the DMAR table and dmar_disabled
// clear (detect_intel_iommu, intel_iommu_init), AMD's the IVRS table and amd_iommu_disabled clear
// (amd_iommu_detect); both stop at no_iommu.
void DecideDriver(const IommuSpec& hw, const Reader& rd, IommuKernel& k) {
  const State& st = rd.st;
  const bool has_intel = hw.vendor == IommuVendor::kIntel, has_amd = hw.vendor == IommuVendor::kAmd;
  if (hw.vendor == IommuVendor::kNone) {
    k.why = "the firmware hands the kernel no DMAR or IVRS table (no IOMMU, or VT-d / AMD-Vi "
            "turned off in its setup), so no IOMMU driver finds a unit";
  } else if (st.no_iommu) {
    k.why = OptionRead(rd, st.no_iommu_by) + " sets no_iommu: no IOMMU driver starts "
            "(arch/x86/kernel/pci-dma.c iommu_setup)";
  } else if (has_intel && st.dmar_disabled) {
    k.why = st.dmar_by >= 0
                ? OptionRead(rd, st.dmar_by) + " turns VT-d DMA remapping off"
                : "this kernel was built with VT-d off by default (CONFIG_INTEL_IOMMU_DEFAULT_OFF: "
                  "dmar_disabled starts at 1) and the command line has no intel_iommu=on";
  } else if (has_amd && st.amd_disabled) {
    k.why = OptionRead(rd, st.amd_off_by) + " turns AMD-Vi off";
  } else {
    k.active = hw.vendor;
    k.why = has_intel ? (st.dmar_by >= 0 ? OptionRead(rd, st.dmar_by) + " and the firmware's DMAR table "
                                           "turn VT-d DMA remapping on"
                                         : "the firmware has a DMAR table and this kernel turns "
                                           "VT-d on by default (Debian's 6.1: "
                                           "CONFIG_INTEL_IOMMU_DEFAULT_ON_INTGPU_OFF, dmar_disabled "
                                           "starts at 0)")
                      : "AMD-Vi starts wherever the firmware has an IVRS table, unless "
                        "amd_iommu=off or iommu=off (drivers/iommu/amd/init.c amd_iommu_detect)";
  }
}

// Marks the options the kernel took that nothing acts on (kNoEffect), saying why: an Intel item
// on an AMD machine and the reverse, an "on" that no_iommu overrides, a domain option with no
// IOMMU on.
void MarkOptionsWithoutEffect(const IommuSpec& hw, const Reader& rd, IommuKernel& k) {
  const State& st = rd.st;
  const bool has_intel = hw.vendor == IommuVendor::kIntel, has_amd = hw.vendor == IommuVendor::kAmd;
  for (auto& o : k.options) {
    if (o.problem != IommuOptionProblem::kNone) continue;
    const bool intel_item = o.key == "intel_iommu", amd_item = o.key == "amd_iommu";
    if (intel_item && !has_intel) {
      o.problem = IommuOptionProblem::kNoEffect;
      o.effect += std::string("; but ") + (has_amd ? "this machine's IOMMU is AMD-Vi (an IVRS "
                                                     "table), which intel_iommu= does not touch"
                                                   : "the firmware has no DMAR table: there is "
                                                     "no VT-d unit to act on");
    } else if (amd_item && !has_amd) {
      o.problem = IommuOptionProblem::kNoEffect;
      o.effect += std::string("; but ") + (has_intel ? "this machine's IOMMU is Intel VT-d (a "
                                                       "DMAR table), which amd_iommu= does not touch"
                                                     : "the firmware has no IVRS table: there is "
                                                       "no AMD-Vi unit to act on");
    } else if (!k.on() && (intel_item || amd_item) && hw.vendor != IommuVendor::kNone &&
               st.no_iommu && o.item.rfind("on", 0) == 0) {
      o.problem = IommuOptionProblem::kNoEffect;
      o.effect += "; but " + OptionRead(rd, st.no_iommu_by) + " keeps every IOMMU driver from starting";
    } else if (!k.on() && (o.key == "iommu.passthrough" || o.key == "iommu.strict" ||
                           (o.key == "iommu" && (o.item.rfind("pt", 0) == 0 ||
                                                 o.item.rfind("nopt", 0) == 0)))) {
      o.problem = IommuOptionProblem::kNoEffect;
      o.effect += "; but no IOMMU is on, so there is no domain to set";
    }
  }
}

}  // namespace

const char* IommuVendorWord(IommuVendor v) {
  switch (v) {
    case IommuVendor::kIntel: return "intel";
    case IommuVendor::kAmd: return "amd";
    case IommuVendor::kNone: return "none";
  }
  return "none";
}

IommuKernel ReadIommuOptions(const std::string& cmdline, const IommuSpec& hw) {
  static const LinuxRules* linux61 = new LinuxRules(LinuxRulesFor("6.1").value());
  return ReadIommuOptions(cmdline, hw, *linux61);
}

IommuKernel ReadIommuOptions(const std::string& cmdline, const IommuSpec& hw,
                             const LinuxRules& rules) {
  Reader rd;
  rd.enable_disable = rules.kstrtobool_enable_disable;
  rd.st.dmar_disabled = !hw.intel_default_on;
  const std::vector<int> position = ReadInKernelOrder(cmdline, rd);
  // Outcomes are listed in line order; the dmesg lines in reading order.
  IommuKernel k;
  std::vector<size_t> order(rd.out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return position[a] < position[b]; });
  for (size_t i : order) k.options.push_back(rd.out[i]);
  for (const auto& o : rd.out)
    if (!o.dmesg.empty()) k.dmesg.push_back(o.dmesg);
  DecideDriver(hw, rd, k);
  // iommu_subsys_init: the command line's choice, else CONFIG_IOMMU_DEFAULT_DMA_LAZY's translated
  // default; a translated default that is not strict becomes DMA-FQ.
  k.strict = rd.st.strict;
  k.domain_from_cmdline = rd.st.passthrough.has_value();
  if (rd.st.passthrough.value_or(false)) k.default_domain = IommuDomainType::kIdentity;
  else k.default_domain = rd.st.strict ? IommuDomainType::kDma : IommuDomainType::kDmaFq;
  MarkOptionsWithoutEffect(hw, rd, k);
  return k;
}

std::string RenderIommuUnits(const IommuSpec& hw, const IommuKernel& k) {
  // drivers/iommu/intel/dmar.c names units "dmar%d"; drivers/iommu/amd/init.c adds them to
  // sysfs as "ivhd%d". A unit appears only once its driver initialised it.
  if (!k.on()) return "";
  const int n = std::max(1, hw.units);
  std::vector<std::string> lines(n);
  for (int i = 0; i < n; ++i)
    lines[i] = std::string(k.active == IommuVendor::kIntel ? "dmar" : "ivhd") + std::to_string(i) + ":";
  for (size_t d = 0; d < hw.devices.size(); ++d) lines[d % n] += " " + hw.devices[d];
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string RenderIommuGroups(const IommuSpec& hw, const IommuKernel& k) {
  // One group per device (a device behind ACS-capable ports), numbered in probe order; each
  // group's type is the default domain (iommu_group_show_type).
  if (!k.on()) return "";
  std::string out;
  for (size_t d = 0; d < hw.devices.size(); ++d)
    out += std::to_string(d) + " " + IommuDomainTypeName(k.default_domain) + " " + hw.devices[d] + "\n";
  return out;
}

std::string RenderAcpiTables(const IommuSpec& hw) {
  // The tables every x86 machine of the presets has, and the IOMMU's own.
  std::vector<std::string> t = {"APIC", "DSDT", "FACP", "HPET", "MCFG"};
  if (hw.vendor == IommuVendor::kIntel) t.push_back("DMAR");
  if (hw.vendor == IommuVendor::kAmd) t.push_back("IVRS");
  std::sort(t.begin(), t.end());
  std::string out;
  for (const auto& n : t) out += n + "\n";
  return out;
}

}  // namespace resmem::sim
