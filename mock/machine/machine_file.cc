// The machine format (machine_file.h): TOML [machine] table <-> MachineSpec.
#include "mock/machine/machine_file.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "backends/api/memory.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/e820_text.h"

namespace resmem::sim {
namespace {

int LineOf(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

// Reads keys of one table and keeps the first error with its position.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  void Fail(const toml::node& at, const std::string& key, const std::string& problem) {
    if (error_.empty())
      error_ = file_ + ":" + std::to_string(LineOf(at)) + ": key 'machine." + key + "': " + problem;
  }
  bool ok() const { return error_.empty(); }
  Status status() const { return ok() ? Status::Ok() : Status::InvalidArgument(error_); }

  std::optional<std::string> String(const toml::table& t, const std::string& key,
                                    const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) {
      Fail(*n, where + key, "expected a string");
      return std::nullopt;
    }
    return *n->value<std::string>();
  }
  std::optional<bool> Bool(const toml::table& t, const std::string& key) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) {
      Fail(*n, key, "expected true or false");
      return std::nullopt;
    }
    return *n->value<bool>();
  }
  std::optional<double> Number(const toml::table& t, const std::string& key, double min_excl) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(*n->value<int64_t>());
    else if (n->is_floating_point()) v = *n->value<double>();
    else {
      Fail(*n, key, "expected a number");
      return std::nullopt;
    }
    if (!(v > min_excl)) {
      Fail(*n, key, "must be greater than " + std::to_string(static_cast<int>(min_excl)));
      return std::nullopt;
    }
    return v;
  }
  // An address or size: a non-negative integer, or a string "0x1f", "4G", "4096".
  std::optional<uint64_t> Address(const toml::node& n, const std::string& key) {
    if (n.is_integer()) {
      const int64_t v = *n.value<int64_t>();
      if (v < 0) {
        Fail(n, key, "cannot be negative");
        return std::nullopt;
      }
      return static_cast<uint64_t>(v);
    }
    if (n.is_string()) {
      const std::string s = *n.value<std::string>();
      if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        const std::string digits = s.substr(2);
        const size_t first = digits.find_first_not_of('0');
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(digits.c_str(), &end, 16);
        if (digits.empty() || *end || errno ||
            (first != std::string::npos && digits.size() - first > 16)) {
          Fail(n, key, "'" + s + "' is not a hex number below 2^64");
          return std::nullopt;
        }
        return v;
      }
      auto r = ParseSize(s);
      if (!r.ok()) {
        Fail(n, key, r.status().message());
        return std::nullopt;
      }
      return *r;
    }
    Fail(n, key, "expected an integer (0x9fbff) or a string (\"0x9fbff\", \"4G\")");
    return std::nullopt;
  }
  std::optional<uint64_t> Address(const toml::table& t, const std::string& key,
                                  const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    return Address(*n, where + key);
  }

  // { start, last } (inclusive) or { start, size } -> [start, end). `where` is "e820[3]."
  bool Range(const toml::table& t, const std::string& where, uint64_t* start, uint64_t* end) {
    if (const toml::node* e = t.get("end")) {
      Fail(*e, where + "end",
           "'end' is ambiguous (the old dmesg form prints exclusive ends, the rest inclusive); "
           "write last = the inclusive last byte (0x9fbff), or size = bytes");
      return false;
    }
    auto s = Address(t, "start", where);
    auto last = Address(t, "last", where);
    auto size = Address(t, "size", where);
    if (!ok()) return false;
    if (!s) {
      Fail(t, where + "start", "missing; each range is { start = A, last = B } (B inclusive)");
      return false;
    }
    if (last.has_value() == size.has_value()) {
      Fail(t, where + "last", "give exactly one of last (inclusive) and size");
      return false;
    }
    if (last) {
      if (*last < *s) {
        Fail(t, where + "last", "is below start");
        return false;
      }
      if (*last == UINT64_MAX) {
        Fail(t, where + "last", "a range ending at 2^64 cannot be held; no x86 machine has memory there");
        return false;
      }
      *start = *s;
      *end = *last + 1;
      return true;
    }
    if (*size == 0 || *s + *size < *s) {
      Fail(t, where + "size", *size == 0 ? "is 0" : "start + size passes 2^64");
      return false;
    }
    *start = *s;
    *end = *s + *size;
    return true;
  }

 private:
  std::string file_;
  std::string error_;
};

// "wb", "wc", "uc", "wt", "wp" or /proc/mtrr's words.
bool ParseMtrrType(const std::string& word, MtrrRange* r) {
  if (auto t = ParseMemoryType(word); t && *t != MemoryType::kUncachedMinus) {
    r->type = *t;
    r->type_name.clear();
    return true;
  }
  if (word == "wt" || word == "write-through") {
    r->type = MemoryType::kUnknown;
    r->type_name = "write-through";
    return true;
  }
  if (word == "wp" || word == "write-protect") {
    r->type = MemoryType::kUnknown;
    r->type_name = "write-protect";
    return true;
  }
  return false;
}

const char* kMtrrTypes = "use wb, wc, uc, wt or wp";

std::string MtrrWord(const MtrrRange& r) {
  switch (r.type) {
    case MemoryType::kWriteBack: return "wb";
    case MemoryType::kWriteCombining: return "wc";
    case MemoryType::kUncached: return "uc";
    default: return r.type_name == "write-through" ? "wt" : "wp";
  }
}

const toml::array* ArrayOfTables(Reader& rd, const toml::table& t, const std::string& key,
                                 const char* shape) {
  const toml::node* n = t.get(key);
  if (!n) return nullptr;
  const auto* arr = n->as_array();
  bool tables = arr != nullptr;
  if (arr)
    for (const auto& e : *arr) tables = tables && e.is_table();
  if (!tables) {
    rd.Fail(*n, key, std::string("expected a list of tables like ") + shape);
    return nullptr;
  }
  return arr;
}

void CheckKeys(Reader& rd, const toml::table& t, const std::string& where,
               const std::vector<std::string>& allowed) {
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    rd.Fail(v, where + key, "unknown key; allowed here: " + list);
  }
}

void ReadMtrr(Reader& rd, const toml::table& t, MachineSpec* spec) {
  if (auto v = rd.Bool(t, "mtrr_enabled")) spec->mtrr.enabled = *v;
  if (auto v = rd.String(t, "mtrr_default", "")) {
    MtrrRange r;
    if (!ParseMtrrType(*v, &r) || r.type == MemoryType::kUnknown)
      rd.Fail(*t.get("mtrr_default"), "mtrr_default", "use wb, wc or uc");
    else spec->mtrr.default_type = r.type;
  }
  if (const auto* arr = ArrayOfTables(rd, t, "mtrr", "{ base = \"0\", size = \"128G\", type = \"wb\" }")) {
    spec->mtrr.variable.clear();
    int i = 0;
    for (const auto& e : *arr) {
      const auto& et = *e.as_table();
      const std::string where = "mtrr[" + std::to_string(i++) + "].";
      CheckKeys(rd, et, where, {"base", "size", "type"});
      auto base = rd.Address(et, "base", where);
      auto size = rd.Address(et, "size", where);
      auto type = rd.String(et, "type", where);
      if (!rd.ok()) return;
      if (!base || !size || !type) {
        rd.Fail(et, where + "base", "each variable MTRR needs base, size and type");
        return;
      }
      MtrrRange r;
      if (*size == 0 || (*size & (*size - 1)) || (*base & (*size - 1))) {
        rd.Fail(et, where + "size", "an MTRR's size must be a power of two and its base aligned to it");
        return;
      }
      if (!ParseMtrrType(*type, &r)) {
        rd.Fail(*et.get("type"), where + "type", kMtrrTypes);
        return;
      }
      r.base = *base;
      r.size = *size;
      spec->mtrr.variable.push_back(r);
    }
  }
  if (const auto* arr = ArrayOfTables(rd, t, "mtrr_fixed", "{ start = 0x0, last = 0x9ffff, type = \"wb\" }")) {
    spec->mtrr.fixed.clear();
    int i = 0;
    for (const auto& e : *arr) {
      const auto& et = *e.as_table();
      const std::string where = "mtrr_fixed[" + std::to_string(i++) + "].";
      CheckKeys(rd, et, where, {"start", "last", "size", "end", "type"});
      uint64_t s = 0, end = 0;
      if (!rd.Range(et, where, &s, &end)) return;
      auto type = rd.String(et, "type", where);
      MtrrRange r;
      if (!type || !ParseMtrrType(*type, &r)) {
        rd.Fail(et, where + "type", kMtrrTypes);
        return;
      }
      // Fixed-range MTRRs cover [0, 1 MiB) in 64/16/4 KiB units (SDM 11.11.2.2).
      if (end > 0x100000 || s % 4096 || end % 4096) {
        rd.Fail(et, where + "start", "fixed MTRRs cover 4 KiB-aligned ranges below 1 MiB");
        return;
      }
      r.base = s;
      r.size = end - s;
      spec->mtrr.fixed.push_back(r);
    }
  }
}

void ReadPerf(Reader& rd, const toml::table& t, MachineSpec* spec) {
  HostPerf& p = spec->perf;
  if (auto v = rd.Number(t, "wb_copy_gbps", 0)) p.wb_copy_gbps = *v;
  if (auto v = rd.Number(t, "wc_write_gbps", 0)) p.wc_write_gbps = *v;
  if (auto v = rd.Number(t, "wc_read_gbps", 0)) p.wc_read_gbps = *v;
  if (auto v = rd.Number(t, "uc_load_latency_ns", 0)) p.uc_load_latency_ns = *v;
  if (auto v = rd.Number(t, "memcpy_load_bytes", 0)) p.memcpy_load_bytes = static_cast<int>(*v);
  if (auto v = rd.Number(t, "page_fault_us", -1)) p.page_fault_us = *v;
  if (auto v = rd.Number(t, "pin_gbps", 0)) p.pin_gbps = *v;
  if (const toml::node* n = t.get("memcpy_threads_gbps")) {
    const auto* arr = n->as_array();
    std::vector<double> out;
    bool good = arr != nullptr;
    if (arr)
      for (const auto& e : *arr) {
        if (e.is_integer()) out.push_back(static_cast<double>(*e.value<int64_t>()));
        else if (e.is_floating_point()) out.push_back(*e.value<double>());
        else good = false;
      }
    if (!good || out.size() > 5)
      rd.Fail(*n, "memcpy_threads_gbps", "expected up to 5 numbers: GB/s with 1, 2, 4, 8, 16 threads");
    else p.memcpy_threads_gbps = out;
  }
}

// An e820 entry's type: a word (usable, reserved, ...) or the type's number. False after a
// failure it reported.
bool ReadE820Type(Reader& rd, const toml::table& et, const std::string& where, E820Entry* entry) {
  const toml::node* tn = et.get("type");
  if (!tn) {
    rd.Fail(et, where + "type", "missing: usable, reserved, ACPI data, ACPI NVS, unusable, "
                                "persistent (type 7), persistent (type 12), soft reserved or a number");
    return false;
  }
  if (tn->is_integer()) {
    const int64_t n = *tn->value<int64_t>();
    if (n < 1 || n > 0xffffffffll) {
      rd.Fail(*tn, where + "type", "an e820 type number is 1 to 2^32-1");
      return false;
    }
    entry->type = static_cast<E820Type>(static_cast<int>(static_cast<uint32_t>(n)));
    return true;
  }
  if (tn->is_string()) {
    auto type = ParseE820TypeWord(*tn->value<std::string>());
    if (!type.ok()) {
      rd.Fail(*tn, where + "type", type.status().message());
      return false;
    }
    entry->type = *type;
    return true;
  }
  rd.Fail(*tn, where + "type", "expected a type word or number");
  return false;
}

// ReadFirmware's parts, each false after a failure it reported (the reading stops there).
bool ReadE820(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const auto* arr = ArrayOfTables(rd, t, "e820", "{ start = 0x0, last = 0x9fbff, type = \"usable\" }");
  if (!arr) return true;
  spec->firmware_e820.clear();
  int i = 0;
  for (const auto& e : *arr) {
    const auto& et = *e.as_table();
    const std::string where = "e820[" + std::to_string(i++) + "].";
    CheckKeys(rd, et, where, {"start", "last", "size", "end", "type"});
    E820Entry entry;
    if (!rd.Range(et, where, &entry.start, &entry.end) || !ReadE820Type(rd, et, where, &entry)) return false;
    spec->firmware_e820.push_back(entry);
  }
  return true;
}

bool ReadMmio(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const auto* arr = ArrayOfTables(rd, t, "mmio", "{ start = 0xfec00000, last = 0xfec003ff, name = \"IOAPIC 0\" }");
  if (!arr) return true;
  spec->mmio.clear();
  int i = 0;
  for (const auto& e : *arr) {
    const auto& et = *e.as_table();
    const std::string where = "mmio[" + std::to_string(i++) + "].";
    CheckKeys(rd, et, where, {"start", "last", "size", "end", "name"});
    MmioRange m;
    if (!rd.Range(et, where, &m.start, &m.end)) return false;
    auto name = rd.String(et, "name", where);
    if (!name || name->empty()) {
      rd.Fail(et, where + "name", "each window has the name /proc/iomem shows (\"PCI Bus 0000:00\")");
      return false;
    }
    m.name = *name;
    spec->mmio.push_back(m);
  }
  return true;
}

void ReadEarlyEdits(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const toml::node* n = t.get("early_edits");
  if (!n) return;
  const auto* arr = n->as_array();
  if (!arr) {
    rd.Fail(*n, "early_edits", "expected a list of the kernel's lines, e.g. "
                               "[\"e820: remove [mem 0x000a0000-0x000fffff] usable\"]");
    return;
  }
  spec->early_edits.clear();
  for (const auto& e : *arr) {
    if (!e.is_string()) {
      rd.Fail(e, "early_edits", "each edit is the kernel's line as a string");
      return;
    }
    auto edit = ParseE820EditLine(*e.value<std::string>());
    if (!edit.ok()) {
      rd.Fail(e, "early_edits", edit.status().message());
      return;
    }
    spec->early_edits.push_back(*edit);
  }
}

void ReadFirmware(Reader& rd, const toml::table& t, MachineSpec* spec) {
  if (ReadE820(rd, t, spec) && ReadMmio(rd, t, spec)) ReadEarlyEdits(rd, t, spec);
}

// A PCI device's sysfs name, "DDDD:BB:DD.F" (drivers/pci/probe.c pci_setup_device: "%04x:%02x:%02x.%d").
bool IsPciName(const std::string& s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return s[11] >= '0' && s[11] <= '7';
}

// iommu = { vendor = "intel", units = 1, devices = ["0000:00:02.0"], intel_default_on = true }
void ReadIommu(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const toml::node* n = t.get("iommu");
  if (!n) return;
  const auto* it = n->as_table();
  if (!it) {
    rd.Fail(*n, "iommu", "expected a table like { vendor = \"intel\", devices = [\"0000:00:02.0\"] }");
    return;
  }
  CheckKeys(rd, *it, "iommu.", {"vendor", "units", "devices", "intel_default_on"});
  IommuSpec io;
  io.described = true;
  auto vendor = rd.String(*it, "vendor", "iommu.");
  if (!rd.ok()) return;
  if (!vendor) {
    rd.Fail(*it, "iommu.vendor", "missing: intel (an ACPI DMAR table), amd (IVRS) or none (no table)");
    return;
  }
  if (*vendor == "intel") io.vendor = IommuVendor::kIntel;
  else if (*vendor == "amd") io.vendor = IommuVendor::kAmd;
  else if (*vendor == "none") io.vendor = IommuVendor::kNone;
  else {
    rd.Fail(*it->get("vendor"), "iommu.vendor",
            "'" + *vendor + "' is not intel (the firmware has a DMAR table: VT-d), amd (an IVRS "
            "table: AMD-Vi) or none (neither: no IOMMU, or it is off in the firmware setup)");
    return;
  }
  if (const toml::node* u = it->get("units")) {
    if (!u->is_integer() || *u->value<int64_t>() < 1 || *u->value<int64_t>() > 64) {
      rd.Fail(*u, "iommu.units", "the number of remapping units, an integer from 1 to 64");
      return;
    }
    io.units = static_cast<int>(*u->value<int64_t>());
  }
  if (const toml::node* d = it->get("devices")) {
    const auto* arr = d->as_array();
    if (!arr) {
      rd.Fail(*d, "iommu.devices", "expected a list of PCI device names like [\"0000:00:02.0\"]");
      return;
    }
    for (const auto& e : *arr) {
      const std::string name = e.is_string() ? *e.value<std::string>() : "";
      if (!IsPciName(name)) {
        rd.Fail(e, "iommu.devices", "'" + name + "' is not a PCI device name DDDD:BB:DD.F "
                                    "(as lspci -D prints it: \"0000:00:02.0\")");
        return;
      }
      io.devices.push_back(name);
    }
  }
  if (const toml::node* b = it->get("intel_default_on")) {
    if (!b->is_boolean()) {
      rd.Fail(*b, "iommu.intel_default_on", "expected true (VT-d on without intel_iommu=on, as "
                                            "Debian's 6.1 and upstream's default config) or false "
                                            "(a kernel built with CONFIG_INTEL_IOMMU_DEFAULT_OFF)");
      return;
    }
    io.intel_default_on = *b->value<bool>();
  }
  spec->iommu = io;
}

// An integer key of `t` in [lo, hi] into *out (absent: left as it is); false after an error.
bool IntKey(Reader& rd, const toml::table& t, const std::string& where, const char* key, int lo,
            int hi, int* out) {
  const toml::node* n = t.get(key);
  if (!n) return true;
  if (!n->is_integer() || *n->value<int64_t>() < lo || *n->value<int64_t>() > hi) {
    rd.Fail(*n, where + key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return false;
  }
  *out = static_cast<int>(*n->value<int64_t>());
  return true;
}

// gpu_pci = { bdf = "0000:18:00.0", gen = 3, width = 8, max_gen = 5, max_width = 16,
//             numa_node = 1, cpu_numa_node = 0, thp = "madvise" }
void ReadGpuPci(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const toml::node* n = t.get("gpu_pci");
  if (!n) return;
  const auto* it = n->as_table();
  if (!it) {
    rd.Fail(*n, "gpu_pci", "expected a table like { gen = 5, width = 16, numa_node = 0 }");
    return;
  }
  CheckKeys(rd, *it, "gpu_pci.", {"bdf", "gen", "width", "max_gen", "max_width", "numa_node",
                                  "cpu_numa_node", "thp"});
  GpuPciSpec g;
  g.described = true;
  if (auto b = rd.String(*it, "bdf", "gpu_pci.")) {
    if (!IsPciName(*b)) rd.Fail(*it->get("bdf"), "gpu_pci.bdf", "'" + *b + "' is not DDDD:BB:DD.F");
    g.bdf = *b;
  }
  if (!IntKey(rd, *it, "gpu_pci.", "gen", 1, 6, &g.link_gen) ||
      !IntKey(rd, *it, "gpu_pci.", "width", 1, 32, &g.link_width)) return;
  g.max_link_gen = std::max(g.max_link_gen, g.link_gen);
  g.max_link_width = std::max(g.max_link_width, g.link_width);
  if (!IntKey(rd, *it, "gpu_pci.", "max_gen", g.link_gen, 6, &g.max_link_gen) ||
      !IntKey(rd, *it, "gpu_pci.", "max_width", g.link_width, 32, &g.max_link_width) ||
      !IntKey(rd, *it, "gpu_pci.", "numa_node", -1, 63, &g.numa_node) ||
      !IntKey(rd, *it, "gpu_pci.", "cpu_numa_node", 0, 63, &g.cpu_numa_node)) return;
  if (auto m = rd.String(*it, "thp", "gpu_pci.")) {
    if (*m != "always" && *m != "madvise" && *m != "never")
      rd.Fail(*it->get("thp"), "gpu_pci.thp", "'" + *m + "' is not always, madvise or never");
    g.thp = *m;
  }
  spec->gpu_pci = g;
}

// The machine format's words for the module policy (mock/machine/module_policy.h).
constexpr const char* kResmemKoWords =
    "unsigned, signed:CN (the CN of the certificate whose key signed it, e.g. \"signed:DKMS module "
    "signing key\", dkms's) or absent";

// A bool key of the module_policy table into *out; false after an error.
bool PolicyBool(Reader& rd, const toml::table& t, const char* key, const char* meaning, bool* out) {
  const toml::node* b = t.get(key);
  if (!b) return true;
  if (!b->is_boolean()) {
    rd.Fail(*b, std::string("module_policy.") + key, std::string("expected true or false: ") + meaning);
    return false;
  }
  *out = *b->value<bool>();
  return true;
}

// trusted_keys = ["Debian Secure Boot CA", ...]: the subjects as /proc/keys names them.
bool PolicyKeys(Reader& rd, const toml::table& t, std::vector<std::string>* out) {
  const toml::node* k = t.get("trusted_keys");
  if (!k) return true;
  const auto* arr = k->as_array();
  if (!arr) {
    rd.Fail(*k, "module_policy.trusted_keys",
            "expected a list of key subjects as /proc/keys names them, like [\"Debian Secure Boot CA\"]");
    return false;
  }
  for (const auto& e : *arr) {
    const std::string name = e.is_string() ? *e.value<std::string>() : "";
    if (name.empty() || name.find('\n') != std::string::npos) {
      rd.Fail(e, "module_policy.trusted_keys", "each key is a non-empty one-line string (its subject)");
      return false;
    }
    out->push_back(name);
  }
  return true;
}

// module_policy = { efi = true, secure_boot = true, modules_disabled = false,
//   trusted_keys = ["Debian Secure Boot CA"], resmem_ko = "signed:DKMS module signing key",
//   module_sig = true, lockdown_lsm = true }
void ReadModulePolicyKey(Reader& rd, const toml::table& t, MachineSpec* spec) {
  const toml::node* n = t.get("module_policy");
  if (!n) return;
  const auto* mt = n->as_table();
  if (!mt) {
    rd.Fail(*n, "module_policy", "expected a table like { efi = true, secure_boot = true, "
                                 "trusted_keys = [\"Debian Secure Boot CA\"], resmem_ko = \"unsigned\" }");
    return;
  }
  CheckKeys(rd, *mt, "module_policy.", {"efi", "secure_boot", "modules_disabled", "trusted_keys",
                                        "resmem_ko", "module_sig", "lockdown_lsm"});
  if (!rd.ok()) return;
  ModulePolicySpec p;
  p.described = true;
  if (!PolicyBool(rd, *mt, "efi", "booted through UEFI (/sys/firmware/efi) or not (legacy BIOS)", &p.efi) ||
      !PolicyBool(rd, *mt, "secure_boot", "the firmware's SecureBoot variable", &p.secure_boot) ||
      !PolicyBool(rd, *mt, "modules_disabled", "/proc/sys/kernel/modules_disabled set to 1", &p.modules_disabled) ||
      !PolicyBool(rd, *mt, "module_sig", "the kernel is built with CONFIG_MODULE_SIG (Debian's is)", &p.module_sig) ||
      !PolicyBool(rd, *mt, "lockdown_lsm", "the kernel has the lockdown LSM (Debian's has)", &p.lockdown_lsm) ||
      !PolicyKeys(rd, *mt, &p.trusted_keys))
    return;
  if (p.secure_boot && !p.efi) {
    rd.Fail(*mt->get("secure_boot"), "module_policy.secure_boot",
            "Secure Boot is a UEFI feature: give efi = true with it, or secure_boot = false");
    return;
  }
  if (const toml::node* ko = mt->get("resmem_ko")) {
    const std::string word = ko->is_string() ? *ko->value<std::string>() : "";
    if (!ParseModuleFileWord(word, &p.resmem_ko) || word.find('\n') != std::string::npos) {
      rd.Fail(*ko, "module_policy.resmem_ko", "'" + word + "' is not " + kResmemKoWords);
      return;
    }
  }
  spec->module_policy = p;
}

// The module_policy key as WriteMachineToml writes it, with its comment line.
std::string ModulePolicyLine(const ModulePolicySpec& p) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::string o = "# The firmware and the kernel's module policy; lockdown and sig_enforce follow with cmdline.\n";
  o += std::string("module_policy = { efi = ") + b(p.efi) + ", secure_boot = " + b(p.secure_boot) +
       ", modules_disabled = " + b(p.modules_disabled) + ", trusted_keys = [";
  for (size_t i = 0; i < p.trusted_keys.size(); ++i) o += (i ? ", " : "") + TomlQuote(p.trusted_keys[i]);
  return o + "], resmem_ko = " + TomlQuote(ModuleFileWord(p.resmem_ko)) + ", module_sig = " + b(p.module_sig) +
         ", lockdown_lsm = " + b(p.lockdown_lsm) + " }\n";
}

uint64_t UsableBytes(const std::vector<E820Entry>& table) {
  uint64_t total = 0;
  for (const auto& e : SanitizeE820(table))
    if (e.type == E820Type::kRam || e.type == E820Type::kReservedKern) total += e.end - e.start;
  return total;
}

std::string Hex(uint64_t v) {
  char buf[32];
  // TOML integers are signed 64-bit: larger values are written as strings.
  if (v > static_cast<uint64_t>(INT64_MAX)) std::snprintf(buf, sizeof buf, "\"0x%" PRIx64 "\"", v);
  else std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// The shortest decimal that reads back as exactly `v`.
std::string Num(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string EditLine(const E820Edit& e) {
  if (!e.line.empty()) return e.line;
  char buf[96];
  std::snprintf(buf, sizeof buf, "[mem 0x%08" PRIx64 "-0x%08" PRIx64 "]", e.start, e.end - 1);  // the kernel's %#010Lx; glibc drops the 0x of zero
  if (e.to == E820Type::kHole)
    return std::string("e820: remove ") + buf +
           (e.from == E820Type::kHole ? "" : " " + E820TypeWord(e.from));
  const E820Type to = e.to == E820Type::kReservedKern ? E820Type::kRam : e.to;
  return std::string("e820: update ") + buf + " " + E820TypeWord(e.from) + " ==> " +
         E820TypeWord(to);
}

}  // namespace

const std::vector<std::string>& MachineFormatKeys() {
  static const std::vector<std::string> kKeys = {
      "name", "description", "kernel", "arch", "cmdline", "cmdline_source", "phys_addr_bits", "ram",
      "kernel_reserved", "pat", "e820", "mmio", "early_edits", "iommu", "module_policy", "gpu_pci",
      "mtrr_enabled",
      "mtrr_default",
      "mtrr", "mtrr_fixed", "wb_copy_gbps", "wc_write_gbps", "wc_read_gbps", "uc_load_latency_ns",
      "memcpy_load_bytes", "page_fault_us", "pin_gbps", "memcpy_threads_gbps"};
  return kKeys;
}

MachineSpec BlankMachine() {
  MachineSpec m;
  m.name = "custom";
  m.mtrr.enabled = true;
  m.mtrr.default_type = MemoryType::kWriteBack;
  return m;
}

Status ApplyMachineTable(const toml::table& t, const std::string& file,
                         const std::vector<std::string>& also_allowed, MachineSpec* spec) {
  Reader rd(file);
  std::vector<std::string> allowed = MachineFormatKeys();
  allowed.insert(allowed.end(), also_allowed.begin(), also_allowed.end());
  CheckKeys(rd, t, "", allowed);
  if (auto v = rd.String(t, "name", "")) spec->name = *v;
  if (auto v = rd.String(t, "description", "")) spec->description = *v;
  if (auto v = rd.String(t, "kernel", "")) {
    // "2.6.32-40-server", "6.1.0-13-amd64": MAJOR.MINOR[.PATCH] then anything.
    int major = 0, minor = 0;
    if (std::sscanf(v->c_str(), "%d.%d", &major, &minor) != 2 || major < 2 || major > 99)
      rd.Fail(*t.get("kernel"), "kernel", "'" + *v + "' is not a Linux version like \"6.1.0\" or \"2.6.32\"");
    spec->kernel_version = *v;
  }
  if (auto v = rd.String(t, "arch", "")) {
    if (*v != "x86_64" && *v != "i386")
      rd.Fail(*t.get("arch"), "arch",
              "'" + *v + "' is not x86_64 (the default) or i386 (a 32-bit kernel, whose mem= "
              "rules before 2.6.27 differ)");
    spec->arch = *v;
  }
  if (auto v = rd.String(t, "cmdline", "")) spec->cmdline = *v;
  if (auto v = rd.String(t, "cmdline_source", "")) {
    if (*v != "kernel" && *v != "grub-cfg" && *v != "grub" && *v != "etc-default-grub")
      rd.Fail(*t.get("cmdline_source"), "cmdline_source",
              "'" + *v + "' is not one of kernel (as /proc/cmdline reads), grub-cfg (a grub.cfg "
              "linux line; \"grub\" is its old name), etc-default-grub (GRUB_CMDLINE_LINUX's value)");
    spec->cmdline_source = *v;
  }
  if (const toml::node* n = t.get("phys_addr_bits")) {
    if (!n->is_integer() || *n->value<int64_t>() < 32 || *n->value<int64_t>() > 52)
      rd.Fail(*n, "phys_addr_bits", "x86-64 has 32 to 52 physical address bits (an integer)");
    else spec->phys_addr_bits = static_cast<int>(*n->value<int64_t>());
  }
  if (auto v = rd.Address(t, "kernel_reserved", "")) spec->kernel_reserved_bytes = *v;
  if (auto v = rd.Bool(t, "pat")) spec->pat_enabled = *v;
  ReadFirmware(rd, t, spec);
  ReadIommu(rd, t, spec);
  ReadGpuPci(rd, t, spec);
  ReadModulePolicyKey(rd, t, spec);
  ReadMtrr(rd, t, spec);
  ReadPerf(rd, t, spec);
  if (!rd.ok()) return rd.status();
  if (spec->firmware_e820.empty())
    rd.Fail(t, "e820", "the machine has no firmware map: give preset = \"NAME\", from = \"FILE\" "
                       "or e820 = [{ start = 0x0, last = 0x9fbff, type = \"usable\" }, ...]");
  if (const toml::node* n = t.get("ram"); n && rd.ok()) {
    // A cross-check, not a generator: the firmware keeps some of the DIMMs' bytes (below 1 MiB,
    // ACPI, SMM), so its usable RAM lies within 1/32 of what is installed.
    if (auto ram = rd.Address(*n, "ram")) {
      const uint64_t usable = UsableBytes(spec->firmware_e820);
      const uint64_t diff = usable > *ram ? usable - *ram : *ram - usable;
      if (diff > *ram / 32)
        rd.Fail(*n, "ram", "the e820 map has " + FormatSize(usable) + " usable, not about " +
                               FormatSize(*ram) + "; correct the map or leave ram out");
    }
  }
  return rd.status();
}

namespace {

// The first line where a non-ASCII byte stands where TOML 1.0 allows only ASCII: outside
// strings and comments, or as the first non-blank character after a line-ending backslash of a
// multi-line basic string (whitespace the parser trims there). 0 when there is none. Tracks
// comments, "basic", 'literal', """multi-line basic""" and '''multi-line literal''' strings.
int FirstNonAsciiOutsideStrings(const std::string& t) {
  enum class In { kCode, kBasic, kLiteral, kMlBasic, kMlLiteral } in = In::kCode;
  int line = 1;
  const size_t n = t.size();
  auto triple = [&](size_t i, char q) {
    return i + 2 < n && t[i] == q && t[i + 1] == q && t[i + 2] == q;
  };
  // The last character in code other than a blank: a quote opens a string only where a key or
  // a value may start (after a line start, '=', '[', '{', ',' or a dotted key's '.'). Elsewhere
  // (a quote in the middle of a bare value such as `0xad_l"x`) toml++ reads on through the
  // token, asking is_value_terminator() of each character, so what follows stays "code" here.
  char last = '\n';
  auto opens_string = [&]() {
    return last == '\n' || last == '\r' || last == '=' || last == '[' || last == '{' || last == ',' ||
           last == '.';
  };
  for (size_t i = 0; i < n; ++i) {
    const char c = t[i];
    if (c == '\n') ++line;
    switch (in) {
      case In::kCode:
        if (static_cast<unsigned char>(c) >= 0x80) return line;
        if ((c == '"' || c == '\'') && !opens_string()) {
          last = c;
          break;
        }
        if (c != ' ' && c != '\t' && c != '#') last = c;
        if (c == '#') {
          while (i + 1 < n && t[i + 1] != '\n') ++i;
        } else if (triple(i, '"')) {
          in = In::kMlBasic;
          i += 2;
        } else if (triple(i, '\'')) {
          in = In::kMlLiteral;
          i += 2;
        } else if (c == '"') {
          in = In::kBasic;
        } else if (c == '\'') {
          in = In::kLiteral;
        }
        break;
      case In::kBasic:
        if (c == '\\' && i + 1 < n && t[i + 1] != '\n') ++i;
        else if (c == '"' || c == '\n') in = In::kCode;
        break;
      case In::kLiteral:
        if (c == '\'' || c == '\n') in = In::kCode;
        break;
      case In::kMlBasic:
        if (c == '\\') {
          size_t j = i + 1;
          while (j < n && (t[j] == ' ' || t[j] == '\t')) ++j;
          // A backslash, blanks or not, before a non-ASCII character is no valid escape; toml++
          // asks is_whitespace() of the character right after the backslash, and trims blanks
          // with the same test, so it meets the character the same way (the machine_file fuzz
          // target's long runs, corpus regress-backslash-blank-nonascii, -backslash-nonascii).
          if (j < n && static_cast<unsigned char>(t[j]) >= 0x80) return line;
          if (j < n && (t[j] == '\n' || t[j] == '\r')) {  // a line-ending backslash
            while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r')) {
              if (t[j] == '\n') ++line;
              ++j;
            }
            if (j < n && static_cast<unsigned char>(t[j]) >= 0x80) return line;
            i = j - 1;
          } else {
            ++i;  // an escape: the next character is not a delimiter
          }
        } else if (triple(i, '"')) {
          i += 2;
          while (i + 1 < n && t[i + 1] == '"') ++i;  // up to two quotes end the content
          in = In::kCode;
        }
        break;
      case In::kMlLiteral:
        if (triple(i, '\'')) {
          i += 2;
          while (i + 1 < n && t[i + 1] == '\'') ++i;
          in = In::kCode;
        }
        break;
    }
  }
  return 0;
}

}  // namespace

Result<toml::table> ParseTomlText(const std::string& text, const std::string& file) {
  if (const int line = FirstNonAsciiOutsideStrings(text))
    return Status::InvalidArgument(
        file + ":" + std::to_string(line) + ": TOML syntax: a non-ASCII character outside a "
        "string or comment (TOML allows only spaces, tabs and ASCII there); put the text in "
        "quotes or remove it");
  toml::parse_result parsed = toml::parse(text, file);
  if (!parsed) {
    const auto& err = parsed.error();
    return Status::InvalidArgument(file + ":" + std::to_string(err.source().begin.line) +
                                   ": TOML syntax: " + std::string(err.description()));
  }
  return std::move(parsed).table();
}

Result<MachineSpec> ParseMachineText(const std::string& text, const std::string& file) {
  RESMEM_ASSIGN_OR_RETURN(const toml::table root, ParseTomlText(text, file));
  for (const auto& [k, v] : root)
    if (k.str() != "machine")
      return Status::InvalidArgument(file + ":" + std::to_string(LineOf(v)) + ": key '" +
                                     std::string(k.str()) +
                                     "': a machine file holds only a [machine] table");
  const auto* m = root.get_as<toml::table>("machine");
  if (!m) return Status::InvalidArgument(file + ":1: key 'machine': missing [machine] table");
  MachineSpec spec = BlankMachine();
  RESMEM_RETURN_IF_ERROR(ApplyMachineTable(*m, file, {}, &spec));
  return spec;
}

std::string WriteMachineToml(const MachineSpec& s) {
  std::string o = "[machine]\n";
  o += "name = " + TomlQuote(s.name) + "\n";
  if (!s.description.empty()) o += "description = " + TomlQuote(s.description) + "\n";
  if (!s.kernel_version.empty()) o += "kernel = " + TomlQuote(s.kernel_version) + "\n";
  if (!s.arch.empty()) o += "arch = " + TomlQuote(s.arch) + "\n";
  o += "cmdline = " + TomlQuote(s.cmdline) + "\n";
  o += "cmdline_source = " + TomlQuote(s.cmdline_source) + "\n";
  o += "phys_addr_bits = " + std::to_string(s.phys_addr_bits) + "\n";
  o += "kernel_reserved = " + std::to_string(s.kernel_reserved_bytes) + "  # bytes\n";
  o += std::string("pat = ") + (s.pat_enabled ? "true" : "false") + "\n";
  o += "# Firmware map; last = the inclusive last byte, as dmesg prints it.\ne820 = [\n";
  for (const auto& e : s.firmware_e820)
    o += "  { start = " + Hex(e.start) + ", last = " + Hex(e.end - 1) + ", type = " +
         TomlQuote(E820TypeWord(e.type)) + " },\n";
  o += "]\nmmio = [\n";
  for (const auto& m : s.mmio)
    o += "  { start = " + Hex(m.start) + ", last = " + Hex(m.end - 1) + ", name = " +
         TomlQuote(m.name) + " },\n";
  o += "]\n";
  if (!s.early_edits.empty()) {
    o += "early_edits = [\n";
    for (const auto& e : s.early_edits) o += "  " + TomlQuote(EditLine(e)) + ",\n";
    o += "]\n";
  }
  if (s.iommu.described) {
    o += "# What the firmware offers; the kernel's IOMMU follows from it and cmdline.\n";
    o += std::string("iommu = { vendor = ") + TomlQuote(IommuVendorWord(s.iommu.vendor)) +
         ", units = " + std::to_string(s.iommu.units) + ", devices = [";
    for (size_t i = 0; i < s.iommu.devices.size(); ++i)
      o += (i ? ", " : "") + TomlQuote(s.iommu.devices[i]);
    o += std::string("], intel_default_on = ") + (s.iommu.intel_default_on ? "true" : "false") + " }\n";
  }
  if (s.module_policy.described) o += ModulePolicyLine(s.module_policy);
  if (s.gpu_pci.described) {
    const GpuPciSpec& g = s.gpu_pci;
    o += "gpu_pci = { bdf = " + TomlQuote(g.bdf) + ", gen = " + std::to_string(g.link_gen) +
         ", width = " + std::to_string(g.link_width) + ", max_gen = " + std::to_string(g.max_link_gen) +
         ", max_width = " + std::to_string(g.max_link_width) + ", numa_node = " +
         std::to_string(g.numa_node) + ", cpu_numa_node = " + std::to_string(g.cpu_numa_node) +
         ", thp = " + TomlQuote(g.thp) + " }\n";
  }
  o += std::string("mtrr_enabled = ") + (s.mtrr.enabled ? "true" : "false") + "\n";
  MtrrRange def;
  def.type = s.mtrr.default_type;
  o += "mtrr_default = " + TomlQuote(MtrrWord(def)) + "\nmtrr = [\n";
  for (const auto& r : s.mtrr.variable)
    o += "  { base = " + Hex(r.base) + ", size = " + Hex(r.size) + ", type = " +
         TomlQuote(MtrrWord(r)) + " },\n";
  o += "]\n";
  if (!s.mtrr.fixed.empty()) {
    o += "mtrr_fixed = [\n";
    for (const auto& r : s.mtrr.fixed)
      o += "  { start = " + Hex(r.base) + ", last = " + Hex(r.base + r.size - 1) + ", type = " +
           TomlQuote(MtrrWord(r)) + " },\n";
    o += "]\n";
  }
  const HostPerf& p = s.perf;
  o += "wb_copy_gbps = " + Num(p.wb_copy_gbps) + "\n";
  o += "wc_write_gbps = " + Num(p.wc_write_gbps) + "\n";
  if (p.wc_read_gbps > 0) o += "wc_read_gbps = " + Num(p.wc_read_gbps) + "\n";
  o += "uc_load_latency_ns = " + Num(p.uc_load_latency_ns) + "\n";
  o += "memcpy_load_bytes = " + std::to_string(p.memcpy_load_bytes) + "\n";
  o += "page_fault_us = " + Num(p.page_fault_us) + "\n";
  o += "pin_gbps = " + Num(p.pin_gbps) + "\n";
  o += "memcpy_threads_gbps = [";
  for (size_t i = 0; i < p.memcpy_threads_gbps.size(); ++i)
    o += (i ? ", " : "") + Num(p.memcpy_threads_gbps[i]);
  o += "]\n";
  return o;
}

namespace {

// TOML strings are UTF-8 (toml.io, "Strings").
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

}  // namespace

std::string TomlQuote(const std::string& s) {
  // Bytes that are not UTF-8 (a paste's stray bytes) are written as \u00XX, so the file loads.
  const bool utf8 = ValidUtf8(s);
  std::string out = "\"";
  for (unsigned char c : s) {
    if (!utf8 && c >= 0x80) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool SameMachine(const MachineSpec& a, const MachineSpec& b, std::string* diff) {
  auto fail = [&](const std::string& what) {
    if (diff) *diff = what;
    return false;
  };
  if (a.name != b.name) return fail("name '" + a.name + "' vs '" + b.name + "'");
  if (a.description != b.description) return fail("description");
  if (a.cmdline != b.cmdline) return fail("cmdline '" + a.cmdline + "' vs '" + b.cmdline + "'");
  if (a.cmdline_source != b.cmdline_source) return fail("cmdline_source");
  if (a.kernel_version != b.kernel_version) return fail("kernel_version");
  if (a.arch != b.arch) return fail("arch '" + a.arch + "' vs '" + b.arch + "'");
  if (a.firmware_e820.size() != b.firmware_e820.size()) return fail("e820 entry count");
  for (size_t i = 0; i < a.firmware_e820.size(); ++i) {
    const auto &x = a.firmware_e820[i], &y = b.firmware_e820[i];
    if (x.start != y.start || x.end != y.end || x.type != y.type)
      return fail("e820 entry " + std::to_string(i));
  }
  if (a.mmio.size() != b.mmio.size()) return fail("mmio count");
  for (size_t i = 0; i < a.mmio.size(); ++i)
    if (a.mmio[i].start != b.mmio[i].start || a.mmio[i].end != b.mmio[i].end ||
        a.mmio[i].name != b.mmio[i].name)
      return fail("mmio " + std::to_string(i) + " (" + a.mmio[i].name + ")");
  if (a.early_edits.size() != b.early_edits.size()) return fail("early_edits count");
  for (size_t i = 0; i < a.early_edits.size(); ++i) {
    const auto &x = a.early_edits[i], &y = b.early_edits[i];
    if (x.start != y.start || x.end != y.end || x.from != y.from || x.to != y.to)
      return fail("early edit " + std::to_string(i));
  }
  auto same_ranges = [](const std::vector<MtrrRange>& x, const std::vector<MtrrRange>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].base != y[i].base || x[i].size != y[i].size || x[i].type != y[i].type ||
          x[i].type_name != y[i].type_name)
        return false;
    return true;
  };
  if (a.mtrr.enabled != b.mtrr.enabled || a.mtrr.default_type != b.mtrr.default_type)
    return fail("mtrr enabled/default");
  if (!same_ranges(a.mtrr.variable, b.mtrr.variable)) return fail("variable MTRRs");
  if (!same_ranges(a.mtrr.fixed, b.mtrr.fixed)) return fail("fixed MTRRs");
  if (a.iommu.described != b.iommu.described || a.iommu.vendor != b.iommu.vendor ||
      a.iommu.units != b.iommu.units || a.iommu.devices != b.iommu.devices ||
      a.iommu.intel_default_on != b.iommu.intel_default_on)
    return fail("iommu");
  const ModulePolicySpec &mp = a.module_policy, &mq = b.module_policy;
  if (mp.described != mq.described || mp.efi != mq.efi || mp.secure_boot != mq.secure_boot ||
      mp.modules_disabled != mq.modules_disabled || mp.module_sig != mq.module_sig ||
      mp.lockdown_lsm != mq.lockdown_lsm || mp.trusted_keys != mq.trusted_keys ||
      ModuleFileWord(mp.resmem_ko) != ModuleFileWord(mq.resmem_ko))
    return fail("module_policy");
  const GpuPciSpec &ga = a.gpu_pci, &gb = b.gpu_pci;
  if (ga.described != gb.described || ga.bdf != gb.bdf || ga.link_gen != gb.link_gen ||
      ga.link_width != gb.link_width || ga.max_link_gen != gb.max_link_gen ||
      ga.max_link_width != gb.max_link_width || ga.numa_node != gb.numa_node ||
      ga.cpu_numa_node != gb.cpu_numa_node || ga.thp != gb.thp)
    return fail("gpu_pci");
  if (a.phys_addr_bits != b.phys_addr_bits) return fail("phys_addr_bits");
  if (a.pat_enabled != b.pat_enabled) return fail("pat");
  if (a.kernel_reserved_bytes != b.kernel_reserved_bytes)
    return fail("kernel_reserved " + std::to_string(a.kernel_reserved_bytes) + " vs " +
                std::to_string(b.kernel_reserved_bytes));
  const HostPerf &p = a.perf, &q = b.perf;
  if (p.wb_copy_gbps != q.wb_copy_gbps || p.wc_write_gbps != q.wc_write_gbps ||
      p.wc_read_gbps != q.wc_read_gbps ||
      p.uc_load_latency_ns != q.uc_load_latency_ns || p.memcpy_load_bytes != q.memcpy_load_bytes ||
      p.page_fault_us != q.page_fault_us || p.pin_gbps != q.pin_gbps ||
      p.memcpy_threads_gbps != q.memcpy_threads_gbps)
    return fail("perf");
  return true;
}

}  // namespace resmem::sim
