// `resmem bench`: registers the command (engine/cli/command.h).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "backends/api/text_file.h"
#include "engine/bench/bench.h"
#include "engine/bench/managed_bench.h"
#include "engine/bench/plot.h"
#include "engine/bench/registration.h"
#include "engine/cli/command.h"
#include "engine/cli/memory_fit.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/transfer/gpu_backend.h"
#include "engine/cli/transfer_options.h"

namespace resmem::bench {
namespace {

// What `resmem bench` is given, as its definition below binds it.
struct BenchArgs {
  BenchOptions options;
  std::string backend = "cuda";
  std::string json, plot, replot;
  std::string nvbandwidth;            // nvbandwidth -j output to check the pinned row against
  uint64_t nvbandwidth_size = 0;      // the -b it ran with
  bool registration = false;          // --registration: cudaHostRegister time instead
  RegistrationOptions reg;
  std::vector<std::string> reg_pieces, reg_state;
  bool managed = false;               // --managed: managed memory (seed 004) instead
  ManagedBenchOptions managed_options;
};

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem bench: %s\n", st.message().c_str());
  return code;
}

std::vector<std::string> PathNames() {
  std::vector<std::string> names;
  for (const auto& p : DefaultPaths()) names.push_back(p.name);
  return names;
}

// The files a run writes (--json; --plot with the .dat and .gp WritePlot writes beside it,
// bench.png for --replot without --plot) and those it reads, checked before anything is
// measured: a path that cannot be written, or that is an input, is exit 2 at once.
Status CheckFiles(const BenchArgs& a, bool plots) {
  std::vector<cli::NamedPath> outputs = {{"--json", a.replot.empty() ? a.json : "", "the results"}};
  const std::string png = !plots             ? ""
                          : !a.plot.empty()  ? a.plot
                          : a.replot.empty() ? ""
                                             : "bench.png";
  if (!png.empty()) {
    const std::string prefix = PlotPrefix(png);
    outputs.push_back({"--plot", png, "the plot"});
    outputs.push_back({"--plot", prefix + ".dat", "the plot's data"});
    outputs.push_back({"--plot", prefix + ".gp", "the plot's gnuplot script"});
  }
  return cli::CheckOutputs(outputs,
                           {{"--replot", a.replot, ""}, {"--nvbandwidth", a.nvbandwidth, ""}});
}

// The largest --sizes block is held at once in device memory and in each path's host memory:
// one that cannot be had is refused before anything is measured (it was a cudaMalloc error,
// exit 4, for --sizes 1T).
Status CheckSizesFit(const BenchOptions& o, Gpu& gpu) {
  if (o.sizes.empty()) return Status::Ok();  // the defaults, up to 256M
  const uint64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  const std::string what = "the largest of --sizes";
  const std::string way_out = "give smaller --sizes";
  RESMEM_RETURN_IF_ERROR(cli::CheckFitsGpu(gpu, what, largest, way_out));
  return cli::CheckRamBeforeStart("bench", what, largest, way_out);
}

// --json FILE once measured: written whole or not at all; 4 when that failed after the check.
int WriteJson(const BenchArgs& a, const std::string& json) {
  if (a.json.empty()) return cli::kExitOk;
  const Status st = cli::WriteOutput({"--json", a.json, "the results"}, json + "\n");
  return st.ok() ? cli::kExitOk : Fail(st, cli::kExitInternal);
}

int Run(const BenchArgs& a);
int RunRegistration(const BenchArgs& a);
int RunManaged(const BenchArgs& a);
int Dispatch(const BenchArgs& a);  // the files checked up front, then one of the three

// The --registration group: cudaHostRegister time instead of copies.
void AddRegistrationOptions(CLI::App& app, BenchArgs* a) {
  const std::string reg = "registration (--registration)";
  app.add_flag("--registration", a->registration,
               "time cudaHostRegister instead of copies")
      ->group(reg);
  cli::AddSizeListOption(app, "--reg-sizes", &a->reg.sizes, "range sizes (default 1G,4G,16G)")
      ->group(reg);
  app.add_option("--reg-backings", a->reg.backings, "backings (default: all)")
      ->type_name("BACKING,...")
      ->delimiter(',')
      ->check(CLI::IsMember(RegistrationBackings()))
      ->group(reg);
  app.add_option("--reg-pieces", a->reg_pieces,
                 "piece sizes, each a run of its own; 0 or whole: one call (default)")
      ->type_name("SIZE,...")
      ->delimiter(',')
      ->group(reg);
  app.add_option("--reg-state", a->reg_state, "untouched, touched (default both)")
      ->type_name("STATE,...")
      ->delimiter(',')
      ->check(CLI::IsMember({"untouched", "touched"}))
      ->group(reg);
  app.add_option("--reg-repeats", a->reg.repeats, "registrations per case (median)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000))
      ->group(reg);
}

// The --managed group: managed memory (seed 004) instead of copies.
void AddManagedOptions(CLI::App& app, BenchArgs* a) {
  const std::string man = "managed memory (--managed)";
  app.add_flag("--managed", a->managed,
               "managed memory instead (seed 004): first-touch migration, prefetch, fault-back, "
               "ping-pong, as ratios to pinned cudaMemcpy of the same run")
      ->group(man);
  cli::AddSizeOption(app, "--managed-size", &a->managed_options.size,
                     "bytes per migration row (default 1G)")
      ->group(man);
  cli::AddSizeOption(app, "--pingpong-size", &a->managed_options.pingpong_size,
                     "bytes each side writes per ping-pong round (default 2M)")
      ->group(man);
  app.add_option("--pingpong-rounds", a->managed_options.pingpong_rounds, "rounds per ping-pong pass (default 100)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000))
      ->group(man);
}

cli::Action Define(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  BenchOptions& o = a->options;
  app.footer(
      "H2D and D2H bandwidth per transfer path and block size against a cudaMallocHost baseline\n"
      "of the same run; medians of --passes; every pass's data verified.\n"
      "`resmem bench --replot bench.json --plot FILE.png` redraws the plot of an earlier run.\n"
      "Paths are interleaved within each pass after an untimed warm-up. A path above 102% of\n"
      "pinned, or a pinned figure more than 3% below --nvbandwidth FILE (nvbandwidth -j output\n"
      "of host_to_device_memcpy_ce and device_to_host_memcpy_ce on this host, run with -b SIZE),\n"
      "marks the run UNRELIABLE in the table and the JSON.\n"
      "`resmem bench --registration` times cudaHostRegister per backing, state, size and piece\n"
      "(on --backend sim: the model's time for any size).\n"
      "Exit: 0 ok, 1 data mismatch, 2 bad input, 3 no GPU, 4 internal.");
  transfer::AddGpuBackendOption(app, &a->backend);
  cli::AddSizeListOption(app, "--sizes", &o.sizes, "block sizes (default 64K to 256M, x4)");
  app.add_option("--paths", o.paths, "transfer paths to measure (default: all)")
      ->type_name("PATH,...")
      ->delimiter(',')
      ->check(CLI::IsMember(PathNames()));
  app.add_option("--passes", o.passes, "passes per cell; the median is reported")
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed", o.seed, "the fault injector's seed (sim)")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  app.add_option("--json", a->json, "also write the results as JSON")
      ->type_name("FILE")
      ->check(cli::PathNamed());
  app.add_option("--plot", a->plot, "also draw the results (gnuplot)")
      ->type_name("FILE.png")
      ->check(cli::PathNamed());
  app.add_option("--replot", a->replot, "redraw the plot of a bench.json (with --plot FILE.png)")
      ->type_name("FILE")
      ->check(cli::PathNamed());
  app.add_flag("--verbose", o.verbose, "print every pass");
  app.add_flag("--warm-cells", o.warm_cells,
               "before each cell's timed copies, one untimed copy of the same path and size, so "
               "they meet caches their own path warmed (default: as the other paths left them)");
  app.add_flag("--dma-source", o.dma_source,
               "host to device: before each timed copy, the GPU's copy engine writes the block "
               "into the path's host memory, as a capture card's DMA does (default: the CPU "
               "stamps it)");
  app.add_option("--overlap-blocks", o.overlap_blocks,
                 "blocks of the copy/kernel overlap rows (seed 001; 0: skip them)")
      ->type_name("N")
      ->check(CLI::Range(0, 100000));
  cli::AddSizeOption(app, "--overlap-block", &o.overlap_block,
                     "block size of the overlap rows (default 16M)");
  app.add_option("--nvbandwidth", a->nvbandwidth,
                 "nvbandwidth -j output of this host: the pinned row is checked against it")
      ->type_name("FILE")
      ->check(cli::PathNamed());
  cli::AddSizeOption(app, "--nvbandwidth-size", &a->nvbandwidth_size,
                     "the buffer size nvbandwidth ran with (-b; default: compare at the largest "
                     "size)")
      ->needs("--nvbandwidth");
  AddRegistrationOptions(app, a.get());
  AddManagedOptions(app, a.get());
  transfer::AddStagingOptions(app, &o.staging);
  return [a] { return Dispatch(*a); };
}

int Dispatch(const BenchArgs& a) {
  if (Status st = CheckFiles(a, !a.managed && !a.registration); !st.ok())
    return Fail(st, cli::kExitBadInput);
  return a.managed ? RunManaged(a) : a.registration ? RunRegistration(a) : Run(a);
}

int RunManaged(const BenchArgs& a) {
  auto backend = transfer::MakeGpuBackend(a.backend, a.options.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto managed = MakeBenchManaged(a.backend, backend->clock);
  if (!managed.ok())
    return Fail(managed.status(), managed.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  ManagedBenchOptions o = a.managed_options;
  o.passes = a.options.passes;
  auto r = RunManagedBench(*backend->gpu, **managed, backend->name, o);
  if (!r.ok())
    return Fail(r.status(), r.status().code() == kInvalidArgument ? cli::kExitBadInput : cli::kExitInternal);
  std::fputs(r->ToTable().c_str(), stdout);
  if (int rc = WriteJson(a, r->ToJson()); rc != cli::kExitOk) return rc;
  return r->DataMismatch() ? cli::kExitCheckFailed : cli::kExitOk;
}

int RunRegistration(const BenchArgs& a) {
  RegistrationOptions o = a.reg;
  for (const auto& p : a.reg_pieces) {
    if (p == "0" || p == "whole") {
      o.chunks.push_back(0);
      continue;
    }
    auto v = ParseSize(p);
    if (!v.ok())
      return Fail(Status::InvalidArgument("--reg-pieces '" + p + "': " + v.status().message()),
                  cli::kExitBadInput);
    o.chunks.push_back(*v);
  }
  if (!a.reg_state.empty()) {
    o.touched.clear();
    for (const auto& s : a.reg_state) o.touched.push_back(s == "touched");
  }
  auto backend = transfer::MakeGpuBackend(a.backend, a.options.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok()) return Fail(r.status(), cli::kExitBadInput);
  std::fputs(r->ToTable().c_str(), stdout);
  if (int rc = WriteJson(a, r->ToJson()); rc != cli::kExitOk) return rc;
  return cli::kExitOk;
}

// --plot PNG: its data and script written like every output (checked up front by CheckFiles),
// then drawn; without gnuplot a note says how to draw it later (exit 0). 4 when a write or
// gnuplot failed.
int Plot(const BenchResult& r, const std::string& png) {
  const PlotFiles files = MakePlotFiles(r, png);
  if (Status st = cli::WriteOutput({"--plot", files.dat_path, "the plot's data"}, files.dat);
      !st.ok())
    return Fail(st, cli::kExitInternal);
  if (Status st = cli::WriteOutput({"--plot", files.gp_path, "the plot's gnuplot script"}, files.gp);
      !st.ok())
    return Fail(st, cli::kExitInternal);
  auto note = DrawPlot(r, png);
  if (!note.ok() && note.status().code() != kUnavailable) return Fail(note.status(), cli::kExitInternal);
  std::puts(note.ok() ? note->c_str() : note.status().message().c_str());
  return cli::kExitOk;
}

int Run(const BenchArgs& a) {
  if (!a.replot.empty()) {
    auto text = ReadTextFile(a.replot, "--replot ");
    if (!text.ok()) return Fail(text.status(), cli::kExitBadInput);
    auto r = BenchResultFromJson(*text);
    if (!r.ok()) return Fail(r.status(), cli::kExitBadInput);
    return Plot(*r, a.plot.empty() ? "bench.png" : a.plot);
  }
  BenchOptions o = a.options;
  if (!a.nvbandwidth.empty()) {
    auto text = ReadTextFile(a.nvbandwidth, "--nvbandwidth ");
    if (!text.ok()) return Fail(text.status(), cli::kExitBadInput);
    auto ref = ReferenceFromNvbandwidthJson(*text, a.nvbandwidth_size);
    if (!ref.ok())
      return Fail(ref.status().WithContext("--nvbandwidth " + a.nvbandwidth), cli::kExitBadInput);
    o.reference = *ref;
    o.reference.source += " (" + a.nvbandwidth + ")";
  }
  auto backend = transfer::MakeGpuBackend(a.backend, o.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  if (Status st = CheckSizesFit(o, *backend->gpu); !st.ok()) return Fail(st, cli::kExitBadInput);
  auto r = RunBench(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok())
    return Fail(r.status(), r.status().code() == kInvalidArgument ? cli::kExitBadInput
                                                                  : cli::kExitInternal);
  std::fputs(r->ToTable().c_str(), stdout);
  if (int rc = WriteJson(a, r->ToJson()); rc != cli::kExitOk) return rc;
  if (!a.plot.empty())
    if (int rc = Plot(*r, a.plot); rc != cli::kExitOk) return rc;
  for (const auto& c : r->cells)
    if (c.verify_failures) return cli::kExitCheckFailed;
  return cli::kExitOk;
}

}  // namespace

RESMEM_REGISTER_COMMAND(bench, ::resmem::cli::Command{
    "bench", "H2D/D2H bandwidth per transfer path and block size vs pinned", Define});

}  // namespace resmem::bench
