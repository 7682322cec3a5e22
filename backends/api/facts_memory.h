// A span of host memory that is only its facts: no bytes behind it (reads give zeros, writes
// vanish), address 0. For asking a model what it does with a mapping of given facts without
// making one: the calibration's replay of measured cases, the simulator's registration bench of
// 1 GiB hugetlb pages on a machine that has none.
#ifndef RESMEM_BACKENDS_API_FACTS_MEMORY_H_
#define RESMEM_BACKENDS_API_FACTS_MEMORY_H_

#include <cstring>
#include <string>
#include <utility>

#include "backends/api/memory.h"

namespace resmem {

class FactsMemory : public HostMemory {
 public:
  explicit FactsMemory(MappingFacts f) : f_(std::move(f)) {}
  uint64_t size() const override { return f_.length; }
  const MappingFacts& facts() const override { return f_; }
  uint64_t address() const override { return 0; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memset(out, 0, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void*, uint64_t len) override {
    return CheckSpan(*this, offset, len, "write");
  }
  std::string Describe() const override { return "facts only (" + f_.Describe() + ")"; }

 private:
  MappingFacts f_;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_FACTS_MEMORY_H_
