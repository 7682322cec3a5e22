// `resmem stream`: registers the command (engine/cli/command.h).
#include <cstdio>
#include <fstream>

#include "engine/cli/command.h"
#include "engine/stream/stream.h"
#include "engine/transfer/gpu_backend.h"

namespace resmem::stream {
namespace {

constexpr const char* kUsage =
    "resmem stream [--backend cuda|sim] [--block 16M] [--rate 10 | --rate 0] [--blocks 600]\n"
    "              [--slots 16] [--consumers 4] [--host memfd|shm|hugetlb|file|anon]\n"
    "              [--path registered-direct|staged|...] [--staged-consumers N]\n"
    "              [--staged-per-consumer (no staged queue: each consumer copies, then checks)]\n"
    "              [staged path options] [--seed N] [--json FILE] [--quiet]\n"
    "Ring-buffer acquisition: a producer writes numbered blocks into the ring at --rate Hz\n"
    "(0 = flat out), consumers move them to the GPU through the transfer engine, and the device\n"
    "checks every block; a failed or wrong copy is retried, a block that cannot be had whole is\n"
    "reported lost by number. Prints throughput, latency p50/p99/max, dropped, corrupt and\n"
    "failed blocks.\n"
    "Exit: 0 ok, 1 blocks dropped, corrupt or failed, 2 bad input, 3 no GPU, 4 internal.";

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem stream: %s\n", st.ToString().c_str());
  return code;
}

int Run(const std::vector<std::string>& argv) {
  if (cli::WantsHelp(argv)) {
    std::puts(kUsage);
    std::puts(transfer::kStagingUsage);
    return cli::kExitOk;
  }
  auto args = transfer::ParseWithStagingArgs(
      argv,
      {"backend", "block", "rate", "blocks", "slots", "consumers", "staged-consumers", "host",
       "path", "seed", "json"},
      {"quiet", "staged-per-consumer"});
  if (!args.ok()) return Fail(args.status(), cli::kExitBadInput);
  StreamOptions o;
  auto block = args->Size("block", o.block_bytes);
  auto rate = args->Number("rate", o.rate_hz);
  auto blocks = args->Number("blocks", static_cast<double>(o.blocks));
  auto slots = args->Number("slots", o.slots);
  auto consumers = args->Number("consumers", o.consumers);
  auto staged_consumers = args->Number("staged-consumers", o.staged_consumers);
  auto seed = args->Number("seed", 1);
  for (const Status& st : {block.status(), rate.status(), blocks.status(), slots.status(),
                           consumers.status(), staged_consumers.status(), seed.status(),
                           transfer::ApplyStagingArgs(*args, &o.staging)})
    if (!st.ok()) return Fail(st, cli::kExitBadInput);
  o.block_bytes = *block;
  o.rate_hz = *rate;
  o.blocks = static_cast<uint64_t>(*blocks);
  o.slots = static_cast<int>(*slots);
  o.consumers = static_cast<int>(*consumers);
  o.staged_consumers = static_cast<int>(*staged_consumers);
  if (o.staged_consumers < 0) return Fail(Status::InvalidArgument("--staged-consumers must be >= 0 (0: as --consumers)"), cli::kExitBadInput);
  o.seed = static_cast<uint64_t>(*seed);
  o.host_kind = args->Get("host", o.host_kind);
  o.path = args->Get("path", "");
  o.progress = !args->Has("quiet");
  if (args->Has("staged-per-consumer")) o.staged_pipeline = false;
  auto backend = transfer::MakeGpuBackend(args->Get("backend", "cuda"), o.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto r = RunStream(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok())
    return Fail(r.status(), r.status().code() == kInvalidArgument ? cli::kExitBadInput
                                                                  : cli::kExitInternal);
  std::puts(r->Summary().c_str());
  if (args->Has("json")) {
    std::ofstream out(args->Get("json", ""));
    out << r->ToJson() << "\n";
  }
  return (r->dropped || r->corrupt || r->failed) ? cli::kExitCheckFailed : cli::kExitOk;
}

}  // namespace

RESMEM_REGISTER_COMMAND(stream, ::resmem::cli::Command{
    "stream", "ring-buffer acquisition to the GPU: throughput, latency, drops, corrupt blocks",
    kUsage, Run});

}  // namespace resmem::stream
