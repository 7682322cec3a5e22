#include "backends/api/managed.h"

namespace resmem {

const char* ProcessorName(Processor p) { return p == Processor::kCpu ? "cpu" : "gpu"; }

const char* ManagedAdviceName(ManagedAdvice a) {
  switch (a) {
    case ManagedAdvice::kReadMostly: return "read-mostly";
    case ManagedAdvice::kPreferredLocation: return "preferred-location";
    case ManagedAdvice::kAccessedBy: return "accessed-by";
  }
  return "?";
}

}  // namespace resmem
