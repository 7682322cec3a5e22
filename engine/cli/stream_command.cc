// `resmem stream`: registers the command (engine/cli/command.h).
#include <cstdio>
#include <memory>

#include "backends/host/host_region.h"
#include "engine/cli/command.h"
#include "engine/cli/memory_fit.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/stream/stream.h"
#include "engine/transfer/gpu_backend.h"
#include "engine/cli/transfer_options.h"

namespace resmem::stream {
namespace {

// What `resmem stream` is given, as its definition below binds it.
struct StreamArgs {
  StreamOptions options;
  std::string backend = "cuda";
  std::string json;
};

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem stream: %s\n", st.message().c_str());
  return code;
}

std::vector<std::string> HostKindNames() {
  std::vector<std::string> names;
  for (host::HostKind k : host::AllHostKinds()) names.push_back(host::HostKindName(k));
  return names;
}

std::vector<std::string> TransferPathNames() {
  std::vector<std::string> names;
  for (transfer::Path p : transfer::PathsFastestFirst()) names.push_back(transfer::PathName(p));
  return names;
}

int Run(const StreamArgs& a);

cli::Action Define(CLI::App& app) {
  auto a = std::make_shared<StreamArgs>();
  StreamOptions& o = a->options;
  app.footer(
      "Ring-buffer acquisition: a producer writes numbered blocks into the ring at --rate Hz\n"
      "(0 = flat out) - the CPU, or with --producer card the card's DMA engine - consumers move\n"
      "them to the GPU through the transfer engine, and the device checks every block; a failed\n"
      "or wrong copy is retried, a block that cannot be had whole is\n"
      "reported lost by number. Prints throughput, latency p50/p99/max, dropped, corrupt and\n"
      "failed blocks.\n"
      "Exit: 0 ok, 1 blocks dropped, corrupt or failed, 2 bad input, 3 no GPU, 4 internal.");
  transfer::AddGpuBackendOption(app, &a->backend);
  cli::AddSizeOption(app, "--block", &o.block_bytes, "bytes of each block", 1);
  app.add_option("--rate", o.rate_hz, "blocks per second the producer writes (0: flat out)")
      ->type_name("HZ")
      ->check(cli::NonNegativeReal());
  app.add_option("--blocks", o.blocks, "blocks to produce")
      ->type_name("N")
      ->check(cli::WholeNumberFrom(1));
  app.add_option("--slots", o.slots, "ring slots in the region")
      ->type_name("N")
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--consumers", o.consumers, "concurrent consumers")
      ->type_name("N")
      ->check(CLI::Range(1, 1024));
  app.add_option("--staged-consumers", o.staged_consumers,
                 "consumers on the staged path (0: as --consumers)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  app.add_flag_callback(
      "--staged-per-consumer", [a] { a->options.staged_pipeline = false; },
      "no staged queue: each consumer copies, then checks");
  app.add_option("--host", o.host_kind, "the host memory standing in for the region")
      ->type_name("KIND")
      ->check(CLI::IsMember(HostKindNames()));
  app.add_option("--path", o.path, "force a transfer path (default: the engine's choice)")
      ->type_name("PATH")
      ->check(CLI::IsMember(TransferPathNames()));
  app.add_option("--seed", o.seed, "the fault injector's seed (sim)")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  app.add_option("--producer", o.producer,
                 "who writes the blocks into the ring: cpu (a thread writes the pattern) or card (the "
                 "card's DMA engine, docs/digitizer.md: a descriptor per free slot; --slots a power of two)")
      ->type_name("WHO")
      ->check(CLI::IsMember({"cpu", "card"}));
  app.add_option("--card-faults", o.card_faults,
                 "with --producer card: the card's fault script, e.g. 'stall 50ms at 1s' (docs/digitizer.md)")
      ->type_name("SCRIPT");
  app.add_option("--json", a->json, "also write the results as JSON")
      ->type_name("FILE")
      ->check(cli::PathNamed());
  app.add_flag_callback(
      "--quiet", [a] { a->options.progress = false; }, "no live progress on stderr");
  transfer::AddStagingOptions(app, &o.staging);
  return [a] { return Run(*a); };
}

// What the options ask that cannot be, before anything runs: a card's fault script without the
// card, a ring larger than this machine's RAM, or the ring with what the run keeps of its blocks.
Status CheckRequest(const StreamOptions& o) {
  if (!o.card_faults.empty() && o.producer != "card")
    return Status::InvalidArgument(
        "--card-faults is the card's fault script, and the blocks come from --producer " +
        o.producer + ": add --producer card, or leave --card-faults out");
  const std::string ring = "the ring, --block " + cli::SpellSize(o.block_bytes) + " x --slots " +
                           std::to_string(o.slots) + ",";
  const uint64_t bytes = cli::SaturatingProduct(o.block_bytes, static_cast<uint64_t>(o.slots));
  const std::string way_out = "give fewer --slots or a smaller --block";
  RESMEM_RETURN_IF_ERROR(cli::CheckFitsRam(ring, bytes, way_out));
  // With what the run keeps of every block (stream.h, kStreamBytesPerBlock): a --blocks meant as
  // "until I stop it" (10^10) was a bad_alloc, exit 134, with no summary.
  const std::string whole = ring.substr(0, ring.size() - 1) + " and " +
                            std::to_string(kStreamBytesPerBlock) + " B kept a block for --blocks " +
                            std::to_string(o.blocks) + ",";
  const uint64_t kept = cli::SaturatingProduct(o.blocks, kStreamBytesPerBlock);
  const uint64_t all = kept > UINT64_MAX - bytes ? UINT64_MAX : bytes + kept;
  return cli::CheckRamBeforeStart(
      "stream", whole, all, "give fewer --blocks (several runs), fewer --slots or a smaller --block");
}

int Run(const StreamArgs& a) {
  const StreamOptions& o = a.options;
  const cli::NamedPath json{"--json", a.json, "the results"};
  if (Status st = CheckRequest(o); !st.ok()) return Fail(st, cli::kExitBadInput);
  if (Status st = cli::CheckOutputs({json}); !st.ok()) return Fail(st, cli::kExitBadInput);
  auto backend = transfer::MakeGpuBackend(a.backend, o.seed);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  if (Status st = cli::CheckFitsGpu(*backend->gpu, "--block", o.block_bytes,
                                    "give a smaller --block");
      !st.ok())
    return Fail(st, cli::kExitBadInput);
  auto r = RunStream(*backend->gpu, *backend->clock, backend->name, o);
  if (!r.ok())
    return Fail(r.status(), r.status().code() == kInvalidArgument ? cli::kExitBadInput
                                                                  : cli::kExitInternal);
  std::puts(r->Summary().c_str());
  if (!a.json.empty()) {
    if (Status st = cli::WriteOutput(json, r->ToJson() + "\n"); !st.ok())
      return Fail(st, cli::kExitInternal);
  }
  return (r->dropped || r->corrupt || r->failed) ? cli::kExitCheckFailed : cli::kExitOk;
}

}  // namespace

RESMEM_REGISTER_COMMAND(stream, ::resmem::cli::Command{
    "stream", "ring-buffer acquisition to the GPU: throughput, latency, drops, corrupt blocks",
    Define});

}  // namespace resmem::stream
