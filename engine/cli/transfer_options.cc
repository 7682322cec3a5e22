// The GPU commands' shared options (transfer_options.h).
#include "engine/cli/transfer_options.h"

#include <cstdlib>
#include <string>

#include "engine/cli/values.h"

namespace resmem::transfer {

CLI::Option* AddGpuBackendOption(CLI::App& app, std::string* name) {
  return app.add_option("--backend", *name, "cuda: the real GPU; sim: the CUDA model (h100-host), no GPU needed")
      ->type_name("NAME")
      ->check(CLI::IsMember({"cuda", "sim"}));
}

namespace {

// A check after AddSizeOption's transform (the value is a byte count by then): whole pages only.
std::string MultipleOf4KiB(const std::string& bytes) {
  return std::strtoull(bytes.c_str(), nullptr, 10) % 4096 == 0
             ? std::string()
             : bytes + " bytes is no multiple of 4 KiB";
}

// Each function below declares one run of the staged path's options on `app`, bound to `*o`,
// under the heading `group`; AddStagingOptions calls them in the order the help lists them.

// The lanes and how a copy is cut: lanes, their pinned buffers, units, segments, the idle
// lanes' spin.
void AddLaneOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_option("--lanes", o->staging_lanes, "lanes: threads, pinned buffers, streams")
      ->type_name("N")
      ->check(CLI::Range(1, 1024))
      ->group(group);
  cli::AddSizeOption(app, "--chunk", &o->staging_chunk,
                     "bytes of each pinned buffer: the largest segment or unit", 4096)
      ->group(group);
  cli::AddSizeOption(app, "--chunk-h2d", &o->staging_chunk_h2d,
                     "the largest host-to-device segment (0 or more than --chunk: --chunk)", 0)
      ->group(group);
  app.add_option("--buffers", o->staging_buffers,
                 "pinned buffers per lane, at least 2: one fills while another is in DMA (2: "
                 "double buffering)")
      ->type_name("N")
      ->check(CLI::Range(1, 16))
      ->check([](const std::string& v) {  // a number 1..16 by now
        return std::strtol(v.c_str(), nullptr, 10) < 2
                   ? std::string("one pinned buffer cannot fill while another is in DMA: give "
                                 "2 or more")
                   : std::string();
      })
      ->group(group);
  cli::AddSizeOption(app, "--min-unit", &o->staging_min_unit,
                     "the smallest unit a copy is cut into", 4096)
      ->group(group);
  app.add_option("--units-per-lane", o->staging_units_per_lane,
                 "a copy is cut into at least lanes x this many units")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 20))
      ->group(group);
  app.add_option("--spin-us", o->staging_spin_us, "idle lanes poll this long before they sleep")
      ->type_name("N")
      ->check(CLI::Range(0, 10 * 1000 * 1000))
      ->group(group);
  app.add_option("--min-segments", o->staging_min_segments,
                 "segments per copy where each stays >= --min-unit")
      ->type_name("N")
      ->check(CLI::Range(1, 64))
      ->group(group);
  cli::AddSizeOption(app, "--ramp-first", &o->staging_ramp_first,
                     "first segment of a copy, each next one twice as large (0: equal segments)",
                     0)
      ->group(group);
}

// Stream signals instead of CUDA events, and the device-to-host segments. --gpu-waits and
// --edge-segment shape the signalled copies only: without --signals they are refused ("requires
// --signals") rather than taken and ignored.
void AddSignalOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  CLI::Option* signals =
      app.add_flag("--signals", o->staging_signals,
                   "single copies through stream signals (cuStreamWriteValue32 words the lanes "
                   "poll) instead of CUDA events")
          ->group(group);
  app.add_option("--min-segments-d2h", o->staging_min_segments_d2h,
                 "segments per device-to-host copy (0: --min-segments)")
      ->type_name("N")
      ->check(CLI::Range(0, 64))
      ->group(group);
  app.add_flag("--gpu-waits", o->staging_gpu_waits,
               "with --signals: queue every DMA at once behind a stream wait (default: queue "
               "each from the host once its segment is ready)")
      ->needs(signals)
      ->group(group);
  cli::AddSizeOption(app, "--edge-segment", &o->staging_edge_segment,
                     "with --signals: the first segment (H2D) or the last (D2H), each one "
                     "further in twice as large (0: equal segments)",
                     0)
      ->needs(signals)
      ->group(group);
}

// How the lanes fill and drain: CPU pinning, non-temporal and CLDEMOTE stores, shared or own
// units, waiting for every lane, prefetch, the device-to-host tail.
void AddLaneStoreOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_flag("--pin-lanes", o->staging_pin_threads, "pin lane threads to CPUs")->group(group);
  app.add_flag("--stream-to-host", o->staging_stream_to_host,
               "non-temporal stores into the host mapping (D2H)")
      ->group(group);
  app.add_flag_callback(
         "--lane-units", [o] { o->staging_segments = false; },
         "each lane DMAs its own units instead of one DMA per shared segment")
      ->group(group);
  cli::AddSizeOption(app, "--demote-from", &o->staging_demote_fill_from,
                     "fill segments of at least this size with ordinary stores, then CLDEMOTE "
                     "them to the last-level cache (0: never)",
                     0)
      ->group(group);
  cli::AddSizeOption(app, "--demote-drain-upto", &o->staging_demote_drain_upto,
                     "device to host: CLDEMOTE the ring's lines after draining segments of at "
                     "most this size (0: never)",
                     0)
      ->group(group);
  app.add_flag_callback(
         "--wait-all-lanes", [o] { o->staging_elastic = false; },
         "a segment copy returns only once every lane thread has run its part (default: once "
         "the work is done)")
      ->group(group);
  app.add_flag_callback(
         "--no-prefetch-dst", [o] { o->staging_prefetch_dst = false; },
         "device to host: claim a piece only once its DMA is done (default: claim it before and "
         "prefetch its destination for writing meanwhile)")
      ->group(group);
  app.add_flag_callback(
         "--no-rotate-ring", [o] { o->staging_rotate_ring = false; },
         "device to host: segment i of every copy into buffer i % S from its start (default: "
         "each copy where the last one ended in the ring); pair it with --demote-drain-upto 2M")
      ->group(group);
  cli::AddSizeOption(app, "--d2h-tail", &o->staging_d2h_tail,
                     "device to host: cut the last segment into a falling ramp down to this size "
                     "(0: equal segments)",
                     0)
      ->group(group);
}

// Copies moved by a kernel (--sm-copy), the copy streams, the fill's smallest piece.
void AddSmCopyOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_flag("--sm-copy", o->staging_sm_copy,
               "single staged copies moved by a kernel in pieces instead of copy-engine DMAs")
      ->group(group);
  cli::AddSizeOption(app, "--sm-copy-upto", &o->staging_sm_copy_upto,
                     "host to device: single staged copies up to this size are moved by a "
                     "kernel in pieces, larger ones by copy-engine DMAs (0: never)",
                     0)
      ->group(group);
  cli::AddSizeOption(app, "--sm-piece", &o->staging_sm_piece,
                     "with --sm-copy or --sm-copy-upto: the piece the lanes and the kernel hand "
                     "over, a multiple of 4 KiB",
                     4096)
      ->check(MultipleOf4KiB)
      ->group(group);
  app.add_option("--sm-blocks", o->staging_sm_blocks,
                 "with --sm-copy or --sm-copy-upto: the kernel's blocks of 512 threads, at most "
                 "one per SM (more are cut to the SM count); the other SMs stay free for a "
                 "program's kernel")
      ->type_name("N")
      ->check(CLI::Range(1, 4096))
      ->group(group);
  app.add_option("--sm-start-us", o->staging_sm_start_us,
                 "with --sm-copy or --sm-copy-upto: how long a copy waits for its kernel to "
                 "start before it goes by copy-engine DMAs instead (a program's kernel holds "
                 "the SMs; 0: wait as long as it takes)")
      ->type_name("US")
      ->check(CLI::Range(0.0, 1e6))
      ->group(group);
  app.add_option("--dma-streams", o->staging_dma_streams,
                 "spread segment DMAs round-robin over this many copy streams")
      ->type_name("N")
      ->check(CLI::Range(1, 16))
      ->group(group);
  cli::AddSizeOption(app, "--min-piece", &o->staging_min_piece,
                     "the smallest piece a filling lane copies of a segment", 4096)
      ->group(group);
}

// Copies cut by the segment plan of the host's costs.
void AddPlanOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  cli::AddSizeOption(app, "--plan-upto", &o->staging_plan_upto,
                     "host to device: single staged copies up to this size are cut by the "
                     "segment plan of the host's costs (--costs), larger ones into equal "
                     "segments (0: never)",
                     0)
      ->group(group);
  cli::AddSizeOption(app, "--plan-d2h-from", &o->staging_plan_d2h_from,
                     "device to host: single staged copies of at least this size are cut by the "
                     "plan, smaller ones into equal segments (0: never)",
                     0)
      ->group(group);
}

// Host-to-device copies in DMAs sized by the fill frontier.
void AddFrontierOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_flag("--frontier", o->staging_frontier,
               "host to device: single copies in DMAs sized by the fill frontier instead of the "
               "segment pipelines (planned or equal segments)")
      ->group(group);
  cli::AddSizeOption(app, "--frontier-unit", &o->staging_frontier_unit,
                     "host to device, by the fill frontier: the unit a lane fills at a time",
                     4096)
      ->group(group);
  cli::AddSizeOption(app, "--frontier-min-dma", &o->staging_frontier_min_dma,
                     "host to device, by the fill frontier: the fewest bytes a DMA waits for "
                     "(but the copy's last)",
                     0)
      ->group(group);
  app.add_option("--frontier-lead-us", o->staging_frontier_lead_us,
                 "host to device, by the fill frontier: while a DMA is queued, issue the next "
                 "only once the queued ones are projected to end within this many us, so it "
                 "takes everything filled meanwhile (fewer, larger DMAs; 0: at once)")
      ->type_name("US")
      ->check(CLI::Range(0.0, 100000.0))
      ->group(group);
  app.add_flag_callback(
         "--no-driver-fill", [o] { o->staging_driver_fills = false; },
         "host to device: the driving lane only issues DMAs (default: it also fills the first "
         "segment until its DMA can be issued)")
      ->group(group);
}

// --costs: the host's staging costs the plan is made from.
void AddCostsOption(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_option_function<std::string>(
         "--costs",
         [o](const std::string& v) { o->staging_costs = ParseStagingCosts(v).value(); },
         std::string("the host's staging costs the plan is made from, as staged_probe --ceiling "
                     "measures and prints them: ") +
             kStagingCostsFields + " (default: the H100 host's)")
      ->check([](const std::string& v) {
        Result<StagingCosts> c = ParseStagingCosts(v);
        return c.ok() ? std::string() : c.status().message();
      })
      ->type_name("LIST")
      ->group(group);
}

// Non-temporal or cached stores into the pinned segments.
void AddFillStoreOptions(CLI::App& app, TransferOptions* o, const std::string& group) {
  app.add_flag("--nt-tail", o->staging_nt_tail,
               "fill a copy's last segments with non-temporal stores whatever their size")
      ->group(group);
  cli::AddSizeOption(app, "--nt-fill-below", &o->staging_nt_fill_below,
                     "fill pinned segments under this size (by the fill frontier: copies under "
                     "it) with non-temporal stores, larger ones through the cache (0: never)",
                     0)
      ->group(group);
  app.add_flag_callback(
         "--cached-fill", [o] { o->staging_nt_fill_below = 0; },
         "fill every pinned segment with ordinary stores (default: segments under 8 MiB get "
         "non-temporal stores)")
      ->group(group);
}

}  // namespace

void AddStagingOptions(CLI::App& app, TransferOptions* o) {
  const std::string group = "staged path";
  AddLaneOptions(app, o, group);
  AddSignalOptions(app, o, group);
  AddLaneStoreOptions(app, o, group);
  AddSmCopyOptions(app, o, group);
  AddPlanOptions(app, o, group);
  AddFrontierOptions(app, o, group);
  AddCostsOption(app, o, group);
  AddFillStoreOptions(app, o, group);
}

}  // namespace resmem::transfer
