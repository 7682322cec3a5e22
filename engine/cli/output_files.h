// The files a command writes (--json, --junit, -o, --report, ...), one way for every command:
// checked up front, before anything is read, run or measured, so a path that cannot be written,
// or one that would overwrite an input, costs nothing and truncates nothing (exit 2); written at
// the end through a temporary file in the same folder renamed over the target, so a run that
// fails, or a write that fails, leaves an existing file as it was.
#ifndef RESMEM_ENGINE_CLI_OUTPUT_FILES_H_
#define RESMEM_ENGINE_CLI_OUTPUT_FILES_H_

#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::cli {

// A path given on the command line and the option that gave it ("--json"; "FILE" for a
// positional). For an output, `what` is what goes there ("the JSON report"), for the messages.
struct NamedPath {
  std::string option;
  std::string path;  // empty: not given, nothing to check or write
  std::string what;
};

// Before the command does anything: every output can be written without touching it now (its
// folder exists and may be written; it is no folder; an existing file may be written), and none
// is the same file as an input or as another output (the same device and inode where the file
// exists, else the same absolute path with its symbolic links and dots resolved; an existing
// output inside an input folder counts as that input). Empty paths are skipped: a caller leaves
// out '-' where it means standard output. kInvalidArgument naming the option, the path, why
// (strerror) and the way out; both options where two paths are one file.
Status CheckOutputs(const std::vector<NamedPath>& outputs,
                    const std::vector<NamedPath>& inputs = {});

// Writes `text` to out.path: into a new file beside it, renamed over it once written whole (an
// existing file keeps its mode; a symbolic link keeps pointing where it did, its target
// replaced). A stream is written in place and is no input's or other output's file: one of this
// process's descriptors (/dev/stdout, /dev/fd/N) through that descriptor, after what the command
// printed there; a device or a FIFO opened for writing. On failure nothing at out.path changed;
// the error names the option, the path and strerror.
Status WriteOutput(const NamedPath& out, const std::string& text);

}  // namespace resmem::cli

#endif  // RESMEM_ENGINE_CLI_OUTPUT_FILES_H_
