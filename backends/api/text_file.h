// A file the user named (a scenario, a machine file, a paste, a profile, a bench JSON), read
// whole: one reader, so every command says the same of a file it cannot read.
#ifndef RESMEM_BACKENDS_API_TEXT_FILE_H_
#define RESMEM_BACKENDS_API_TEXT_FILE_H_

#include <string>

#include "backends/api/status.h"

namespace resmem {

// The bytes of `path`. Errno status when it cannot be read: "cannot read WHAT'PATH': STRERROR;
// WAY_OUT", `what` naming it ("scenario file ", "" for none) and the way out following the
// errno (ENOENT: check the path; EACCES: make it readable or run as a user who may read it;
// EISDIR: a folder where a file is wanted).
Result<std::string> ReadTextFile(const std::string& path, const std::string& what);

// Why a file or folder could not be read or listed with `err`, and the way out, as above:
// "STRERROR; WAY_OUT" ("No such file or directory; check the path"), STRERROR alone for an errno
// with no advice.
std::string WhyUnreadable(int err);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_TEXT_FILE_H_
