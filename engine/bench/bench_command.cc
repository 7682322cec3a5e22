// `resmem bench`: registers the command (engine/cli/command.h).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/bench/bench.h"
#include "engine/bench/registration.h"
#include "engine/cli/command.h"
#include "engine/transfer/gpu_backend.h"

namespace resmem::bench {
namespace {

constexpr const char* kUsage =
    "resmem bench [--backend cuda|sim] [--sizes 64K,256K,...] [--paths a,b] [--passes N]\n"
    "             [staged path options] [--seed N] [--json FILE] [--plot FILE.png] [--verbose]\n"
    "             [--nvbandwidth FILE [--nvbandwidth-size SIZE]]\n"
    "resmem bench --replot bench.json --plot FILE.png\n"
    "resmem bench --registration [--backend cuda|sim] [--reg-sizes 1G,4G,...]\n"
    "             [--reg-backings anon,anon-thp,memfd,hugetlb-2m,hugetlb-1g] [--reg-pieces 0,1G,...]\n"
    "             [--reg-state untouched,touched] [--reg-repeats N] [--json FILE]\n"
    "H2D and D2H bandwidth per transfer path and block size against a cudaMallocHost baseline of\n"
    "the same run; medians of --passes (default 7), the paths interleaved within each pass after an\n"
    "untimed warm-up; every pass's data verified. A path above 102% of pinned, or a pinned figure\n"
    "more than 3% below --nvbandwidth FILE (nvbandwidth -j output of host_to_device_memcpy_ce and\n"
    "device_to_host_memcpy_ce on this host, run with -b SIZE MiB) marks the run UNRELIABLE.\n"
    "paths: pinned registered-direct registered-hugetlb registered-chunked staged staged-file\n"
    "       zero-copy-mapped pageable\n"
    "--backend cuda (default) is the real GPU; sim is the CUDA model (h100-host), no GPU needed.\n"
    "Exit: 0 ok, 1 data mismatch, 2 bad input, 3 no GPU, 4 internal.";

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem bench: %s\n", st.ToString().c_str());
  return code;
}

// `resmem bench --registration`: cudaHostRegister time per backing, state, size and piece.
template <typename Args>
int RunRegistration(const Args& args) {
  RegistrationOptions o;
  for (const auto& s : args.List("reg-sizes", "")) {
    auto v = ParseSize(s);
    if (!v.ok()) return Fail(Status::InvalidArgument("--reg-sizes '" + s + "': " + v.status().message()), 2);
    o.sizes.push_back(*v);
  }
  for (const auto& s : args.List("reg-pieces", "")) {
    if (s == "0" || s == "whole") {
      o.chunks.push_back(0);
      continue;
    }
    auto v = ParseSize(s);
    if (!v.ok()) return Fail(Status::InvalidArgument("--reg-pieces '" + s + "': " + v.status().message()), 2);
    o.chunks.push_back(*v);
  }
  o.backings = args.List("reg-backings", "");
  if (args.Has("reg-state")) {
    o.touched.clear();
    for (const auto& s : args.List("reg-state", "")) {
      if (s != "touched" && s != "untouched")
        return Fail(Status::InvalidArgument("--reg-state '" + s + "': use touched, untouched"), 2);
      o.touched.push_back(s == "touched");
    }
  }
  auto repeats = args.Number("reg-repeats", 1);
  if (!repeats.ok()) return Fail(repeats.status(), cli::kExitBadInput);
  o.repeats = static_cast<int>(*repeats);
  auto backend = transfer::MakeGpuBackend(args.Get("backend", "cuda"), 1);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok()) return Fail(r.status(), cli::kExitBadInput);
  std::fputs(r->ToTable().c_str(), stdout);
  if (args.Has("json")) {
    std::ofstream out(args.Get("json", ""));
    out << r->ToJson() << "\n";
    if (!out) return Fail(Status::Errno(errno, "cannot write " + args.Get("json", "")), 4);
  }
  return cli::kExitOk;
}

int Run(const std::vector<std::string>& argv) {
  if (cli::WantsHelp(argv)) {
    std::puts(kUsage);
    std::puts(transfer::kStagingUsage);
    return cli::kExitOk;
  }
  auto args = transfer::ParseWithStagingArgs(
      argv, {"backend", "sizes", "paths", "passes", "seed", "json", "plot", "replot", "nvbandwidth",
             "nvbandwidth-size",
             "reg-sizes", "reg-backings", "reg-pieces", "reg-state", "reg-repeats"}, {"verbose", "registration"});
  if (!args.ok()) return Fail(args.status(), cli::kExitBadInput);
  if (args->Has("replot")) {
    std::ifstream in(args->Get("replot", ""));
    if (!in) return Fail(Status::InvalidArgument("cannot read " + args->Get("replot", "")), 2);
    std::stringstream ss;
    ss << in.rdbuf();
    auto r = BenchResultFromJson(ss.str());
    if (!r.ok()) return Fail(r.status(), cli::kExitBadInput);
    auto note = WritePlot(*r, args->Get("plot", "bench.png"));
    if (!note.ok()) return Fail(note.status(), cli::kExitInternal);
    std::puts(note->c_str());
    return cli::kExitOk;
  }
  if (args->Has("registration")) return RunRegistration(*args);
  BenchOptions o;
  for (const auto& s : args->List("sizes", "")) {
    auto v = ParseSize(s);
    if (!v.ok()) return Fail(Status::InvalidArgument("--sizes '" + s + "': " + v.status().message()), 2);
    o.sizes.push_back(*v);
  }
  o.paths = args->List("paths", "");
  if (args->Has("nvbandwidth")) {
    const std::string file = args->Get("nvbandwidth", "");
    std::ifstream in(file);
    if (!in) return Fail(Status::InvalidArgument("--nvbandwidth: cannot read " + file), 2);
    std::stringstream ss;
    ss << in.rdbuf();
    uint64_t ref_size = 0;
    if (args->Has("nvbandwidth-size")) {
      auto v = ParseSize(args->Get("nvbandwidth-size", ""));
      if (!v.ok()) return Fail(v.status().WithContext("--nvbandwidth-size"), 2);
      ref_size = *v;
    }
    auto ref = ReferenceFromNvbandwidthJson(ss.str(), ref_size);
    if (!ref.ok()) return Fail(ref.status().WithContext("--nvbandwidth " + file), 2);
    o.reference = *ref;
    o.reference.source += " (" + file + ")";
  }
  auto passes = args->Number("passes", 7);
  auto seed = args->Number("seed", 1);
  for (const Status& st : {passes.status(), seed.status(),
                           transfer::ApplyStagingArgs(*args, &o.staging)})
    if (!st.ok()) return Fail(st, cli::kExitBadInput);
  o.passes = static_cast<int>(*passes);
  o.seed = static_cast<uint64_t>(*seed);
  o.verbose = args->Has("verbose");
  auto backend = transfer::MakeGpuBackend(args->Get("backend", "cuda"), o.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto r = RunBench(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok())
    return Fail(r.status(), r.status().code() == kInvalidArgument ? cli::kExitBadInput
                                                                  : cli::kExitInternal);
  std::fputs(r->ToTable().c_str(), stdout);
  if (args->Has("json")) {
    std::ofstream out(args->Get("json", ""));
    out << r->ToJson() << "\n";
    if (!out) return Fail(Status::Errno(errno, "cannot write " + args->Get("json", "")), 4);
  }
  if (args->Has("plot")) {
    auto note = WritePlot(*r, args->Get("plot", ""));
    std::puts(note.ok() ? note->c_str() : note.status().ToString().c_str());
  }
  for (const auto& c : r->cells)
    if (c.verify_failures) return cli::kExitCheckFailed;
  return cli::kExitOk;
}

}  // namespace

RESMEM_REGISTER_COMMAND(bench, ::resmem::cli::Command{
    "bench", "H2D/D2H bandwidth per transfer path and block size vs pinned", kUsage, Run});

}  // namespace resmem::bench
