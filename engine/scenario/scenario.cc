// Scenario files: TOML -> Scenario; steps are checked and typed by their definitions (step_defs.cc).
#define TOML_EXCEPTIONS 0
#include "engine/scenario/scenario.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "backends/api/memory.h"
#include "backends/api/text_file.h"
#include "engine/backend/backend_factory.h"
#include "engine/paste/paste.h"
#include "engine/scenario/step_defs.h"
#include "mock/gpu/sim_gpu.h"
#include "mock/machine/machine_file.h"
#include "toml++/toml.h"

namespace resmem::scenario {
namespace {

namespace fs = std::filesystem;

// Collects the first error with its position.
class Errors {
 public:
  explicit Errors(std::string file) : file_(std::move(file)) {}
  void Add(int line, const std::string& key, const std::string& problem) {
    if (!first_.empty()) return;
    first_ = file_ + ":" + std::to_string(line) + ": key '" + key + "': " + problem;
  }
  // An error already written as "FILE:LINE: key '...': problem".
  void AddRaw(const std::string& message) {
    if (first_.empty()) first_ = message;
  }
  bool any() const { return !first_.empty(); }
  Status status() const { return Status::InvalidArgument(first_); }

 private:
  std::string file_;
  std::string first_;
};

int LineOf(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

std::string TypeName(const toml::node& n) {
  if (n.is_string()) return "a string";
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a number";
  if (n.is_boolean()) return "a boolean";
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a date/time";
}

// Converts a scalar node (or an array of strings) to a RawValue. Keyed tables
// ({ "1G" = 3.9, ... }) select the entry of the current sweep case.
bool ToValue(const toml::node& n, const std::string& key, const std::string& sweep_value,
             Errors& errors, RawValue* out) {
  out->line = LineOf(n);
  if (const auto* t = n.as_table()) {
    if (sweep_value.empty()) {
      errors.Add(LineOf(n), key, "a table of per-case values needs a [sweep] section");
      return false;
    }
    const toml::node* entry = t->get(sweep_value);
    if (!entry) {
      errors.Add(LineOf(n), key, "no entry for the sweep case '" + sweep_value + "'");
      return false;
    }
    return ToValue(*entry, key, "", errors, out);
  }
  if (auto s = n.value<std::string>(); s && n.is_string()) {
    out->kind = RawValue::Kind::kString;
    out->str = *s;
    return true;
  }
  if (n.is_integer()) {
    out->kind = RawValue::Kind::kInt;
    out->i = *n.value<int64_t>();
    return true;
  }
  if (n.is_floating_point()) {
    out->kind = RawValue::Kind::kFloat;
    out->f = *n.value<double>();
    return true;
  }
  if (n.is_boolean()) {
    out->kind = RawValue::Kind::kBool;
    out->b = *n.value<bool>();
    return true;
  }
  if (const auto* a = n.as_array()) {
    out->kind = RawValue::Kind::kList;
    for (const auto& e : *a) {
      if (!e.is_string()) {
        errors.Add(LineOf(e), key, "lists hold strings only, found " + TypeName(e));
        return false;
      }
      out->list.push_back(*e.value<std::string>());
    }
    return true;
  }
  errors.Add(LineOf(n), key, "unsupported value type " + TypeName(n));
  return false;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Checks that every key of `table` is in `allowed`; names the unknown key and the allowed ones.
void CheckKeys(const toml::table& table, const std::string& where,
               const std::vector<std::string>& allowed, Errors& errors) {
  for (const auto& [k, v] : table) {
    const std::string key(k.str());
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      errors.Add(LineOf(v), where.empty() ? key : where + "." + key,
                 "unknown key; allowed here: " + JoinNames(allowed));
  }
}

std::optional<std::string> GetString(const toml::table& t, const std::string& key,
                                     const std::string& where, Errors& errors) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_string()) {
    errors.Add(LineOf(*n), where + "." + key, "expected a string, found " + TypeName(*n));
    return std::nullopt;
  }
  return *n->value<std::string>();
}

std::optional<int64_t> GetInt(const toml::table& t, const std::string& key,
                              const std::string& where, Errors& errors) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_integer()) {
    errors.Add(LineOf(*n), where + "." + key, "expected an integer, found " + TypeName(*n));
    return std::nullopt;
  }
  return *n->value<int64_t>();
}

std::optional<bool> GetBool(const toml::table& t, const std::string& key,
                            const std::string& where, Errors& errors) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_boolean()) {
    errors.Add(LineOf(*n), where + "." + key, "expected true or false, found " + TypeName(*n));
    return std::nullopt;
  }
  return *n->value<bool>();
}

std::optional<double> GetNumber(const toml::table& t, const std::string& key,
                                const std::string& where, Errors& errors) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (n->is_integer()) return static_cast<double>(*n->value<int64_t>());
  if (n->is_floating_point()) return *n->value<double>();
  errors.Add(LineOf(*n), where + "." + key, "expected a number, found " + TypeName(*n));
  return std::nullopt;
}

// An integer in [min, max] (max INT64_MAX: no upper bound); outside it, an error giving the range
// and what the key means (`note`).
std::optional<int64_t> GetIntIn(const toml::table& t, const std::string& key, const std::string& where,
                                int64_t min, int64_t max, const std::string& note, Errors& errors) {
  auto v = GetInt(t, key, where, errors);
  if (!v || (*v >= min && *v <= max)) return v;
  const std::string range = max == INT64_MAX ? "at least " + std::to_string(min)
                                             : std::to_string(min) + " to " + std::to_string(max);
  errors.Add(LineOf(*t.get(key)), where + "." + key,
             std::to_string(*v) + " is out of range: give " + range + " (" + note + ")");
  return std::nullopt;
}

// A number, finite and 0 or more; otherwise an error saying so and what the key means.
std::optional<double> GetNonNegative(const toml::table& t, const std::string& key,
                                     const std::string& where, const std::string& note, Errors& errors) {
  auto v = GetNumber(t, key, where, errors);
  if (!v || (std::isfinite(*v) && *v >= 0)) return v;
  char text[32];
  std::snprintf(text, sizeof text, "%g", *v);
  errors.Add(LineOf(*t.get(key)), where + "." + key,
             std::string(text) + " is out of range: give a finite number, at least 0 (" + note + ")");
  return std::nullopt;
}

// A backend name as `resmem run --backend` takes it (a preset, or platform=P,region=R,gpu=G;
// engine/backend knows them): a misspelt one would match no run, so the file would still run
// there.
void CheckBackendName(const std::string& name, int line, const std::string& where, Errors& errors) {
  auto spec = engine::ResolveBackendSpec(name);
  if (!spec.ok()) errors.Add(line, where, spec.status().message());
}

// The tables of an array of tables ([[step]], [[fault]]): an entry that is not a table
// (step = [1, 2]) is an error naming the key and the entry's index, not skipped.
std::vector<const toml::table*> TablesOf(const toml::node& n, const std::string& key, Errors& errors) {
  std::vector<const toml::table*> out;
  const auto* arr = n.as_array();
  if (!arr) {
    errors.Add(LineOf(n), key, "write " + key + "s as [[" + key + "]] tables");
    return out;
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& e = *arr->get(i);
    if (const auto* t = e.as_table()) out.push_back(t);
    else
      errors.Add(LineOf(e), key + "[" + std::to_string(i) + "]",
                 TypeName(e) + ", not a table: write each " + key + " as a [[" + key + "]] table");
  }
  return out;
}

// A size given as "188G"/"0x1000" or an integer.
std::optional<uint64_t> GetSize(const toml::table& t, const std::string& key,
                                const std::string& where, Errors& errors) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (n->is_integer()) return static_cast<uint64_t>(*n->value<int64_t>());
  if (n->is_string()) {
    auto r = ParseSize(*n->value<std::string>());
    if (r.ok()) return *r;
    errors.Add(LineOf(*n), where + "." + key, r.status().message());
    return std::nullopt;
  }
  errors.Add(LineOf(*n), where + "." + key, "expected a size like \"16M\" or an integer");
  return std::nullopt;
}

// not_applicable.BACKEND = "reason", or per sweep case { "128G" = "reason" } (only the cases
// named are not applicable).
void ParseNotApplicable(const toml::node& na, const std::string& sweep_value, Errors& errors,
                        Scenario* s) {
  const auto* nt = na.as_table();
  if (!nt) {
    errors.Add(LineOf(na), "scenario.not_applicable", "expected a table backend = \"reason\"");
    return;
  }
  for (const auto& [k, v] : *nt) {
    const std::string backend(k.str());
    const std::string where = "scenario.not_applicable." + backend;
    CheckBackendName(backend, LineOf(v), where, errors);
    const toml::node* reason = &v;
    if (const auto* per_case = v.as_table()) {
      if (sweep_value.empty()) {
        errors.Add(LineOf(v), where, "a table of per-case reasons needs a [sweep] section");
        continue;
      }
      reason = per_case->get(sweep_value);
      if (!reason) continue;
      if (!reason->is_string()) {
        errors.Add(LineOf(*reason), where, "expected the reason as a string");
        continue;
      }
    }
    if (!reason->is_string()) {
      errors.Add(LineOf(v), where, "expected the reason as a string, or a table of reasons per sweep case");
      continue;
    }
    s->not_applicable[backend] = *reason->value<std::string>();
  }
}

void ParseScenarioTable(const toml::table& t, const std::string& sweep_value, Errors& errors,
                        Scenario* s) {
  CheckKeys(t, "scenario",
            {"name", "title", "kind", "seed_file", "cites", "twin", "remedy", "seed",
             "not_applicable"},
            errors);
  if (auto v = GetString(t, "name", "scenario", errors)) s->name = *v;
  else if (!errors.any()) errors.Add(LineOf(t), "scenario.name", "missing; every scenario has a name");
  if (auto v = GetString(t, "title", "scenario", errors)) s->title = *v;
  if (auto v = GetString(t, "kind", "scenario", errors)) {
    if (*v != "bug" && *v != "fix" && *v != "check")
      errors.Add(LineOf(*t.get("kind")), "scenario.kind", "'" + *v + "' is not one of bug, fix, check");
    s->kind = *v;
  } else {
    s->kind = "check";
  }
  if (auto v = GetString(t, "seed_file", "scenario", errors)) s->seed_file = *v;
  if (auto v = GetString(t, "cites", "scenario", errors)) s->cites = *v;
  if (auto v = GetString(t, "twin", "scenario", errors)) s->twin = *v;
  if (auto v = GetString(t, "remedy", "scenario", errors)) s->remedy = *v;
  if (auto v = GetInt(t, "seed", "scenario", errors)) {
    if (*v < 0) errors.Add(LineOf(*t.get("seed")), "scenario.seed", "must be >= 0");
    s->seed = static_cast<uint64_t>(*v);
  }
  if (const toml::node* na = t.get("not_applicable")) ParseNotApplicable(*na, sweep_value, errors, s);
}

}  // namespace

namespace {

// The scenario files being loaded, outermost first, as their paths were given: a [machine]
// from = that names a scenario file loads that file in turn, and one already on the chain would
// load itself forever.
using LoadChain = std::vector<std::string>;

Result<std::vector<Scenario>> ParseScenarioIn(const std::string& text, const std::string& path,
                                              const LoadChain& chain);

fs::path Canonical(const std::string& path) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(path, ec);
  return ec ? fs::absolute(path, ec).lexically_normal() : c;
}

// Refuses to load `path` again when it is on `chain` (compared as canonical paths), naming the
// chain.
Status CheckNotLoading(const std::string& path, const LoadChain& chain) {
  const fs::path canonical = Canonical(path);
  for (const auto& f : chain) {
    if (Canonical(f) != canonical) continue;
    std::string names;
    for (const auto& c : chain) names += c + " -> ";
    return Status::InvalidArgument("'" + path + "' is already being loaded (" + names + path +
                                   "): a machine cannot come from a scenario that comes from it; "
                                   "name a machine file or a preset instead");
  }
  return Status::Ok();
}

// The machine of a scenario file: its first case's (a [sweep] whose cases boot different
// machines is refused, naming the way out).
Result<sim::MachineSpec> ScenarioMachine(const std::string& text, const std::string& path,
                                         const LoadChain& chain) {
  RESMEM_ASSIGN_OR_RETURN(std::vector<Scenario> cases, ParseScenarioIn(text, path, chain));
  if (cases.empty()) return Status::InvalidArgument(path + ": the scenario has no case");
  std::string diff;
  for (const auto& c : cases)
    if (!sim::SameMachine(c.machine, cases[0].machine, &diff))
      return Status::InvalidArgument(path + ": its [sweep] cases boot different machines (" +
                                     cases[0].case_label + " and " + c.case_label + " differ in " +
                                     diff + "); name a machine file or a preset instead");
  return cases[0].machine;
}

// LoadMachineSource, from a scenario file on `chain` (empty: from the command line).
Result<sim::MachineSpec> LoadMachineSourceIn(const std::vector<std::string>& paths,
                                             const LoadChain& chain) {
  if (paths.empty()) return Status::InvalidArgument("no file named");
  const fs::path first(paths[0]);
  std::error_code ec;
  if (paths.size() == 1 && fs::is_regular_file(first, ec)) {
    RESMEM_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(first.string(), "machine file "));
    // A scenario file's [machine] is a machine too (`resmem plan --machine scenarios/x.toml`):
    // the one the scenario boots, with its preset or from= resolved and its keys applied.
    if (text.find("[scenario]") != std::string::npos) {
      RESMEM_RETURN_IF_ERROR(CheckNotLoading(first.string(), chain));
      return ScenarioMachine(text, first.string(), chain);
    }
    if (first.extension() == ".toml" || text.find("[machine]") != std::string::npos)
      return sim::ParseMachineText(text, first.string());
  }
  auto inputs = import::ReadPasteFiles(paths);
  if (!inputs.ok()) return inputs.status();
  for (const auto& in : *inputs)
    if (fs::path(in.name).extension() == ".toml")
      return Status::InvalidArgument("'" + in.name + "' is a machine file: name it alone, not "
                                     "with other sources");
  import::Imported imported = import::ReadPaste(*inputs);
  std::string all;
  for (const auto& p : paths) all += " " + p;
  if (!imported.has_firmware_map || imported.errors) {
    for (const auto& n : imported.notes)
      if (n.verdict == import::Verdict::kError)
        return Status::InvalidArgument(n.file + ":" + std::to_string(n.line) + ": " + n.what +
                                       " (run `resmem import" + all + "` for every line's verdict)");
  }
  imported.machine.name = first.filename().string() == "" ? "imported" : first.stem().string();
  return imported.machine;
}

}  // namespace

Result<sim::MachineSpec> LoadMachineSource(const std::vector<std::string>& paths) {
  return LoadMachineSourceIn(paths, {});
}

Result<sim::MachineSpec> LoadMachineArgument(const std::string& preset_or_path) {
  std::error_code ec;
  if (fs::exists(preset_or_path, ec)) return LoadMachineSource({preset_or_path});
  return sim::MachinePreset(preset_or_path);
}

namespace {

// The machine `from` names: files (or folders) beside the scenario (the last one on `chain`).
Result<sim::MachineSpec> LoadMachineFrom(const std::string& scenario_file,
                                         const std::vector<std::string>& from, const LoadChain& chain) {
  std::vector<std::string> paths;
  for (const auto& f : from) paths.push_back((fs::path(scenario_file).parent_path() / f).string());
  return LoadMachineSourceIn(paths, chain);
}

// [machine]: preset = "NAME", from = "FILE", or the machine itself in the machine format
// (mock/machine/machine_file.h); keys given here override what the preset or file gave.
void ParseMachine(const toml::table& t, const LoadChain& chain, Errors& errors, Scenario* s) {
  auto preset = GetString(t, "preset", "machine", errors);
  // from = "FILE" or ["FILE", ...]
  std::optional<std::vector<std::string>> from;
  if (const toml::node* f = t.get("from")) {
    std::vector<std::string> list;
    if (f->is_string()) list.push_back(*f->value<std::string>());
    if (const auto* arr = f->as_array()) {
      for (const auto& e : *arr) {
        if (e.is_string()) list.push_back(*e.value<std::string>());
      }
    }
    if (list.empty() || (f->as_array() && list.size() != f->as_array()->size()))
      errors.Add(LineOf(*f), "machine.from",
                 "expected a file name, or a list of them: \"box.toml\", [\"dmesg.txt\", \"iomem.txt\"]");
    from = list;
  }
  if (errors.any()) return;
  if (preset && from) {
    errors.Add(LineOf(*t.get("from")), "machine.from",
               "give preset or from, not both (keys written here override either)");
    return;
  }
  s->machine = sim::BlankMachine();
  if (preset) {
    auto spec = sim::MachinePreset(*preset);
    if (!spec.ok()) {
      errors.Add(LineOf(*t.get("preset")), "machine.preset", spec.status().message());
      return;
    }
    s->machine = *spec;
  } else if (from) {
    auto spec = LoadMachineFrom(s->file, *from, chain);
    if (!spec.ok()) {
      errors.Add(LineOf(*t.get("from")), "machine.from", spec.status().message());
      return;
    }
    s->machine = *spec;
  } else if (!t.get("e820")) {
    errors.Add(LineOf(t), "machine.preset",
               "missing; choose one of: " + JoinNames(sim::MachinePresetNames()) +
                   ", or from = \"FILE\", or describe the machine (e820 = [...])");
    return;
  }
  Status st = sim::ApplyMachineTable(t, s->file, {"preset", "from"}, &s->machine);
  if (!st.ok()) errors.AddRaw(st.message());
}

void ParseDriver(const toml::table& t, Errors& errors, Scenario* s) {
  CheckKeys(t, "driver",
            {"mode", "cache", "pfn", "length_type", "range_check", "lazy_fault", "abi_version",
             "ranges"},
            errors);
  if (auto v = GetString(t, "mode", "driver", errors)) {
    auto m = ParseMapMode(*v);
    if (!m) errors.Add(LineOf(*t.get("mode")), "driver.mode", "'" + *v + "' is not pfnmap or pages");
    else s->driver.mode = *m;
  }
  if (auto v = GetString(t, "cache", "driver", errors)) {
    auto c = ParseCacheType(*v);
    if (!c) errors.Add(LineOf(*t.get("cache")), "driver.cache", "'" + *v + "' is not wb, wc or uc");
    else s->driver.cache = *c;
  }
  if (auto v = GetString(t, "pfn", "driver", errors)) {
    if (*v == "physical") s->driver.pfn_source = sim::SimDriverSpec::PfnSource::kPhysical;
    else if (*v == "kernel-virtual") s->driver.pfn_source = sim::SimDriverSpec::PfnSource::kKernelVirtual;
    else errors.Add(LineOf(*t.get("pfn")), "driver.pfn", "'" + *v + "' is not physical or kernel-virtual");
  }
  if (auto v = GetString(t, "length_type", "driver", errors)) {
    if (*v == "int32") s->driver.length_as_int32 = true;
    else if (*v == "size_t") s->driver.length_as_int32 = false;
    else errors.Add(LineOf(*t.get("length_type")), "driver.length_type", "'" + *v + "' is not size_t or int32");
  }
  if (auto v = GetBool(t, "range_check", "driver", errors)) s->driver.range_check = *v;
  if (auto v = GetBool(t, "lazy_fault", "driver", errors)) s->driver.lazy_fault = *v;
  if (auto v = GetIntIn(t, "abi_version", "driver", 0, UINT32_MAX, "the driver's ABI version, 32 bits", errors))
    s->driver.abi_version = static_cast<uint32_t>(*v);
  if (const toml::node* r = t.get("ranges")) {
    const auto* arr = r->as_array();
    if (!arr) {
      errors.Add(LineOf(*r), "driver.ranges", "expected a list like [\"64M$0x40000000\"]");
      return;
    }
    for (const auto& e : *arr) {
      auto text = e.value<std::string>();
      const auto dollar = text ? text->find('$') : std::string::npos;
      if (!text || dollar == std::string::npos) {
        errors.Add(LineOf(e), "driver.ranges", "each range is \"SIZE$PHYS\", e.g. \"64M$0x40000000\"");
        continue;
      }
      auto size = ParseSize(text->substr(0, dollar));
      auto phys = ParseSize(text->substr(dollar + 1));
      if (!size.ok() || !phys.ok()) {
        errors.Add(LineOf(e), "driver.ranges", "cannot read '" + *text + "' as SIZE$PHYS");
        continue;
      }
      s->driver.ranges.emplace_back(*phys, *size);
    }
  }
}

void ParseCuda(const toml::table& t, Errors& errors, Scenario* s) {
  CheckKeys(t, "cuda", {"profile", "gpus"}, errors);
  if (auto v = GetString(t, "profile", "cuda", errors)) {
    const auto names = sim::CudaProfileNames();
    if (std::find(names.begin(), names.end(), *v) == names.end())
      errors.Add(LineOf(*t.get("profile")), "cuda.profile",
                 "unknown profile '" + *v + "'; known: " + JoinNames(names));
    s->cuda_profile = *v;
  }
  if (auto v = GetInt(t, "gpus", "cuda", errors)) {
    if (*v < 1 || *v > 16) errors.Add(LineOf(*t.get("gpus")), "cuda.gpus", "between 1 and 16");
    s->gpu_count = static_cast<int>(*v);
  }
}

// [[fault]]'s error (and code): resolved now, as errno and signal names are fixed and CUDA names
// by the profile (or code = N).
void ParseFaultError(const toml::table& t, const std::string& effect, const Scenario& s,
                     Errors& errors, FaultRule* r) {
  auto err = GetString(t, "error", "fault", errors);
  if (!err) {
    if (r->effect == FaultEffect::kError || r->effect == FaultEffect::kSignal)
      errors.Add(LineOf(t), "fault.error",
                 "effect '" + effect + "' needs error = \"cudaError...\", \"EIO\" or \"SIGBUS\"");
    else if (t.get("code"))
      errors.Add(LineOf(*t.get("code")), "fault.code",
                 "code = N numbers the CUDA error of error = \"cudaError...\", and effect '" +
                     effect + "' has none; remove code");
    return;
  }
  const int code_override = static_cast<int>(
      GetIntIn(t, "code", "fault", 1, INT32_MAX, "the CUDA error number, in the profile's numbering", errors)
          .value_or(-1));
  // code = N numbers a CUDA error only: with an errno or a signal it would be dropped unseen.
  if (code_override >= 0 && err->rfind("cuda", 0) != 0)
    errors.Add(LineOf(*t.get("code")), "fault.code",
               "code = N numbers a CUDA error, but error = \"" + *err +
                   "\" is not one; remove code, or name a cudaError... in error");
  if (err->rfind("SIG", 0) == 0) {
    const int sig = SignalFromName(*err);
    if (sig < 0) errors.Add(LineOf(*t.get("error")), "fault.error", "unknown signal '" + *err + "'");
    r->error = Status::Signal(sig, "injected " + *err);
    if (r->effect == FaultEffect::kError) r->effect = FaultEffect::kSignal;
  } else if (err->rfind("cuda", 0) == 0) {
    const int code = code_override >= 0 ? code_override : CudaErrorFromName(s.cuda_profile, *err);
    if (code < 0)
      errors.Add(LineOf(*t.get("error")), "fault.error",
                 "'" + *err + "' is not an error of profile " + s.cuda_profile +
                     " (put [cuda] before [[fault]], or give code = N)");
    r->error = Status::Cuda(code, "injected " + *err);
  } else {
    const int e = ErrnoFromName(*err);
    if (e < 0) errors.Add(LineOf(*t.get("error")), "fault.error", "unknown errno name '" + *err + "'");
    r->error = Status::Errno(e, "injected " + *err);
  }
}

void ParseFault(const toml::table& t, Errors& errors, Scenario* s) {
  CheckKeys(t, "fault",
            {"point", "trigger", "nth", "probability", "range_start", "range_end", "effect",
             "error", "code", "delay_ms", "fraction", "max_fires"},
            errors);
  FaultRule r;
  auto point = GetString(t, "point", "fault", errors);
  if (!point) {
    errors.Add(LineOf(t), "fault.point",
               "missing; one of: " + JoinNames(FaultInjector::KnownPoints()));
    return;
  }
  r.point = *point;
  const auto& known = FaultInjector::KnownPoints();
  if (std::find(known.begin(), known.end(), r.point) == known.end())
    errors.Add(LineOf(*t.get("point")), "fault.point",
               "unknown fault point '" + r.point + "'; known: " + JoinNames(known));
  const std::string trigger = GetString(t, "trigger", "fault", errors).value_or("always");
  if (trigger == "always") r.trigger = FaultTrigger::kAlways;
  else if (trigger == "nth") r.trigger = FaultTrigger::kNth;
  else if (trigger == "probability") r.trigger = FaultTrigger::kProbability;
  else if (trigger == "range") r.trigger = FaultTrigger::kAddressRange;
  else errors.Add(LineOf(*t.get("trigger")), "fault.trigger", "'" + trigger + "' is not always, nth, probability or range");
  if (auto v = GetIntIn(t, "nth", "fault", 1, INT64_MAX, "the call that fails, counted from 1", errors))
    r.nth = static_cast<uint64_t>(*v);
  if (auto v = GetNumber(t, "probability", "fault", errors)) r.probability = *v;
  if (auto v = GetSize(t, "range_start", "fault", errors)) r.range_start = *v;
  if (auto v = GetSize(t, "range_end", "fault", errors)) r.range_end = *v;
  if (auto v = GetIntIn(t, "max_fires", "fault", 0, INT64_MAX, "0: unlimited", errors))
    r.max_fires = static_cast<uint64_t>(*v);
  const std::string effect = GetString(t, "effect", "fault", errors).value_or("error");
  if (effect == "error") r.effect = FaultEffect::kError;
  else if (effect == "delay") r.effect = FaultEffect::kDelay;
  else if (effect == "corrupt") r.effect = FaultEffect::kCorrupt;
  else if (effect == "short") r.effect = FaultEffect::kShortCopy;
  else if (effect == "signal") r.effect = FaultEffect::kSignal;
  else errors.Add(LineOf(*t.get("effect")), "fault.effect", "'" + effect + "' is not error, delay, corrupt, short or signal");
  if (auto v = GetNonNegative(t, "delay_ms", "fault", "milliseconds each fire takes", errors))
    r.delay_seconds = *v / 1000.0;
  if (auto v = GetNumber(t, "fraction", "fault", errors)) r.short_fraction = *v;
  ParseFaultError(t, effect, *s, errors, &r);
  if (errors.any()) return;
  FaultInjector probe(0);
  Status st = probe.AddRule(r);
  if (!st.ok()) {
    errors.Add(LineOf(t), "fault", st.message());
    return;
  }
  s->faults.push_back(r);
}

void ParseExpect(const toml::node& n, const std::string& where, const StepDef& def,
                 const std::string& sweep_value, Errors& errors, Expectation* out) {
  const auto* t = n.as_table();
  if (!t) {
    errors.Add(LineOf(n), where, "expected a table, e.g. expect = { error = \"cudaErrorUnknown\" }");
    return;
  }
  out->line = LineOf(n);
  for (const auto& [k, v] : *t) {
    const std::string key(k.str());
    const ExpectDef* expect = FindExpectDef(key);
    if (!expect || !def.AllowsExpectation(key)) {
      errors.Add(LineOf(v), where + "." + key,
                 "not an expectation of '" + def.name + "'; allowed: " +
                     JoinNames(def.AllowedExpectations()));
      continue;
    }
    RawValue val;
    if (!ToValue(v, where + "." + key, sweep_value, errors, &val)) continue;
    Status st = expect->set(val, out);
    if (!st.ok()) errors.Add(val.line, where + "." + key, st.message());
  }
  // Bounds no bandwidth meets would fail on every backend: a mistake in the file, not a finding.
  if (out->mbps_min && out->mbps_max && out->mbps_min->value > out->mbps_max->value)
    errors.Add(out->mbps_max->line, where + ".mbps_max",
               out->mbps_max->written + " is below mbps_min " + out->mbps_min->written +
                   ": no bandwidth meets both; give mbps_min <= mbps_max");
}

// Converts the step's argument `key` into `args`; false (with the error) when it is not one.
void ParseArg(const toml::node& v, const std::string& key, const std::string& where,
              const StepDef& def, const std::string& sweep_value, Errors& errors, StepArgs* args) {
  const ArgDef* arg = def.FindArg(key);
  if (!arg) {
    std::vector<std::string> names;
    for (const auto& a : def.args) names.push_back(a.name);
    errors.Add(LineOf(v), where,
               "'" + def.name + "' takes no such argument; it takes: " + JoinNames(names) +
                   (names.empty() ? "(nothing)" : "") + ", expect, on");
    return;
  }
  RawValue val;
  if (!ToValue(v, where, sweep_value, errors, &val)) return;
  Status st = arg->set(val, args);
  if (!st.ok()) errors.Add(val.line, where, st.message());
}

// [step.on.BACKEND]: skip, expect, or arguments replacing the step's own there (typed now too).
void ParseBackendOverride(const toml::table& t, const std::string& backend, const StepDef& def,
                          const std::string& sweep_value, Errors& errors, Step* step) {
  const std::string where = "step.on." + backend;
  BackendOverride o;
  if (auto sk = GetString(t, "skip", where, errors)) o.skip = *sk;
  StepArgs args = step->args;
  bool any_arg = false;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "skip") continue;
    if (key == "expect") {
      Expectation ex;
      ParseExpect(v, where + ".expect", def, sweep_value, errors, &ex);
      o.expect = ex;
      continue;
    }
    if (!def.FindArg(key)) {
      std::vector<std::string> allowed = {"skip", "expect"};
      for (const auto& a : def.args) allowed.push_back(a.name);
      errors.Add(LineOf(v), where + "." + key, "unknown key; allowed here: " + JoinNames(allowed));
      continue;
    }
    ParseArg(v, key, where + "." + key, def, sweep_value, errors, &args);
    any_arg = true;
  }
  if (any_arg) o.args = std::move(args);
  step->on[backend] = std::move(o);
}

// [step.on.BACKEND] tables, each for a backend `resmem run --backend` knows.
void ParseBackendOverrides(const toml::table& on, const StepDef& def, const std::string& sweep_value,
                           Errors& errors, Step* step) {
  for (const auto& [bk, bv] : on) {
    const std::string backend(bk.str());
    CheckBackendName(backend, LineOf(bv), "step.on." + backend, errors);
    const auto* bt = bv.as_table();
    if (!bt) {
      errors.Add(LineOf(bv), "step.on." + backend, "expected a table with skip or expect");
      continue;
    }
    ParseBackendOverride(*bt, backend, def, sweep_value, errors, step);
  }
}

void ParseStep(const toml::table& t, const std::string& sweep_value, Errors& errors, Scenario* s) {
  auto op_name = GetString(t, "do", "step", errors);
  if (!op_name) {
    errors.Add(LineOf(t), "step.do", "missing; every [[step]] says what it does: " + JoinNames(StepNames()));
    return;
  }
  const StepDef* def = FindStepDef(*op_name);
  if (!def) {
    errors.Add(LineOf(*t.get("do")), "step.do", "unknown step '" + *op_name + "'; known: " + JoinNames(StepNames()));
    return;
  }
  Step step;
  step.args = def->blank;
  step.file = s->file;
  step.line = LineOf(t);
  std::set<std::string> given;
  const toml::table* on = nullptr;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "do") continue;
    if (key == "expect") {
      ParseExpect(v, "step.expect", *def, sweep_value, errors, &step.expect);
      continue;
    }
    if (key == "on") {
      on = v.as_table();
      if (!on) errors.Add(LineOf(v), "step.on", "expected [step.on.BACKEND] tables");
      continue;
    }
    ParseArg(v, key, "step." + key, *def, sweep_value, errors, &step.args);
    given.insert(key);
  }
  for (const auto& a : def->args)
    if (a.required && !given.count(a.name))
      errors.Add(step.line, "step." + a.name, "'" + def->name + "' needs " + a.name + " (" + a.help + ")");
  // After the step's own arguments: a backend's arguments replace those.
  if (on) ParseBackendOverrides(*on, *def, sweep_value, errors, &step);
  s->steps.push_back(std::move(step));
}

std::string Substitute(const std::string& text, const std::string& var, const std::string& value) {
  if (var.empty()) return text;
  const std::string token = "${" + var + "}";
  std::string out = text;
  for (size_t pos = out.find(token); pos != std::string::npos; pos = out.find(token, pos + value.size()))
    out.replace(pos, token.size(), value);
  return out;
}

Result<Scenario> ParseOneCase(const std::string& text, const std::string& path,
                              const std::string& sweep_var, const std::string& sweep_value,
                              const LoadChain& chain) {
  const std::string expanded = Substitute(text, sweep_var, sweep_value);
  RESMEM_ASSIGN_OR_RETURN(const toml::table root, sim::ParseTomlText(expanded, path));
  Errors errors(path);
  CheckKeys(root, "", {"scenario", "machine", "driver", "cuda", "sweep", "fault", "step"}, errors);
  Scenario s;
  s.file = path;
  if (!sweep_var.empty()) s.case_label = sweep_var + "=" + sweep_value;
  const auto* sc = root.get_as<toml::table>("scenario");
  if (!sc) return Status::InvalidArgument(path + ":1: key 'scenario': missing [scenario] table with name, kind, seed_file");
  ParseScenarioTable(*sc, sweep_value, errors, &s);
  if (const auto* m = root.get_as<toml::table>("machine")) ParseMachine(*m, chain, errors, &s);
  else errors.Add(1, "machine", "missing [machine] table (preset = one of " + JoinNames(sim::MachinePresetNames()) + ")");
  if (const auto* d = root.get_as<toml::table>("driver")) ParseDriver(*d, errors, &s);
  if (const auto* c = root.get_as<toml::table>("cuda")) ParseCuda(*c, errors, &s);
  if (const toml::node* f = root.get("fault"))
    for (const toml::table* ft : TablesOf(*f, "fault", errors)) ParseFault(*ft, errors, &s);
  const toml::node* st = root.get("step");
  const auto* steps = st ? st->as_array() : nullptr;
  if (!st || (steps && steps->empty()))
    errors.Add(st ? LineOf(*st) : 1, "step", "no [[step]] tables: a scenario needs at least one step");
  else
    for (const toml::table* tt : TablesOf(*st, "step", errors)) ParseStep(*tt, sweep_value, errors, &s);
  if (errors.any()) return errors.status();
  return s;
}

Result<std::vector<Scenario>> ParseScenarioIn(const std::string& text, const std::string& path,
                                              const LoadChain& chain) {
  // Find the sweep first (it decides how many cases the file makes).
  RESMEM_ASSIGN_OR_RETURN(const toml::table parsed, sim::ParseTomlText(text, path));
  std::string var;
  std::vector<std::string> values;
  if (const toml::node* sw = parsed.get("sweep")) {
    const auto* t = sw->as_table();
    if (!t || t->size() != 1)
      return Status::InvalidArgument(path + ":" + std::to_string(LineOf(*sw)) +
                                     ": key 'sweep': give exactly one variable, e.g. "
                                     "reservation = [\"1G\", \"4G\"]");
    for (const auto& [k, v] : *t) {  // exactly one entry (checked above)
      var = std::string(k.str());
      const auto* arr = v.as_array();
      if (!arr || arr->empty())
        return Status::InvalidArgument(path + ":" + std::to_string(LineOf(v)) + ": key 'sweep." + var +
                                       "': expected a non-empty list of strings");
      for (const auto& e : *arr) {
        if (!e.is_string())
          return Status::InvalidArgument(path + ":" + std::to_string(LineOf(e)) + ": key 'sweep." +
                                         var + "': values are strings");
        values.push_back(*e.value<std::string>());
      }
    }
  }
  std::vector<Scenario> out;
  if (values.empty()) values.push_back("");
  LoadChain loading = chain;
  loading.push_back(path);
  for (const auto& value : values) {
    auto s = ParseOneCase(text, path, var, value, loading);
    if (!s.ok()) return s.status();
    out.push_back(std::move(s).value());
  }
  return out;
}

}  // namespace

Result<std::vector<Scenario>> ParseScenarioText(const std::string& text, const std::string& path) {
  return ParseScenarioIn(text, path, {});
}

Result<std::vector<Scenario>> LoadScenarioFile(const std::string& path) {
  RESMEM_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path, "scenario file "));
  return ParseScenarioText(text, path);
}

Result<std::vector<std::string>> CollectScenarioFiles(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return std::vector<std::string>{path};
  if (!fs::is_directory(path, ec))
    return Status::Errno(ENOENT, "'" + path + "' is neither a scenario file nor a folder of them");
  std::vector<std::string> files;
  // A folder that cannot be listed is an error, not a folder without scenarios: its files would
  // be left out unseen.
  std::string listing = path;
  auto it = fs::recursive_directory_iterator(path, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) listing = it->path().string();
    if (it->is_regular_file() && it->path().extension() == ".toml") files.push_back(it->path().string());
  }
  if (ec)
    return Status::Errno(ec.value(), "cannot list the scenario folder '" + listing + "' (under '" +
                                         path + "'): " + WhyUnreadable(ec.value()));
  std::sort(files.begin(), files.end());
  if (files.empty())
    return Status::Errno(ENOENT, "no *.toml scenario files under '" + path + "'");
  return files;
}

}  // namespace resmem::scenario
