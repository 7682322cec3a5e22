// The command-line options the GPU commands (bench, stream, calibrate, and the staged_probe tool)
// share, as CLI11 options bound to the transfer engine's settings (engine/transfer). The commands
// own their command lines; the features below them know nothing of CLI11.
#ifndef RESMEM_ENGINE_CLI_TRANSFER_OPTIONS_H_
#define RESMEM_ENGINE_CLI_TRANSFER_OPTIONS_H_

#include <string>

#include "CLI/CLI.hpp"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {

// The staged path's tuning options, shared by bench and stream (transfer_engine.h says what each
// does), declared on a command's app under the heading "staged path" and bound to `*o`, whose
// values are the defaults: --lanes N, --chunk SIZE, --buffers N, --min-unit SIZE,
// --units-per-lane N, --spin-us N; flags --pin-lanes, --stream-to-host, --lane-units,
// --cached-fill. Ranges are checked by the parse. `o` must outlive the parse.
void AddStagingOptions(CLI::App& app, TransferOptions* o);

// --backend cuda|sim for the commands above, bound to `*name` (its value is the default).
CLI::Option* AddGpuBackendOption(CLI::App& app, std::string* name);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_CLI_TRANSFER_OPTIONS_H_
