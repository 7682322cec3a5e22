// resmem_seq's shrinker: a failing list delta-debugged (ddmin) to the smallest sub-list that
// still fails the same way, printed as a --keep list (docs/reliability.md "Random syscall
// sequences"). Any sub-list of a list is a valid program (resmem_seq_op.h), so every candidate
// runs; each in a fresh child process (resmem_seq_executor.h RunInChild).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_SHRINKER_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_SHRINKER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace resmem::seq {

// Runs the ops of a sub-list (indexes into the list): "" or the failure.
using RunList = std::function<std::string(const std::vector<long>& keep)>;

// What kind of failure a message reports: "mmap", "kernel log", "signal 7", "pagemap" ...: the
// text after the op's "): " up to the first '(' or ':'. Shrinking keeps it.
std::string Signature(const std::string& msg);
// ddmin over the kept op indexes: the smallest list that still fails with this signature, within
// the time budget; *runs counts the candidates run.
std::vector<long> Shrink(const RunList& run, std::vector<long> keep, double budget_s, const std::string& signature,
                         int* runs);
// "3,17,40-45" (what --keep reads).
std::string KeepList(const std::vector<long>& keep);
// Reads a --keep list of indexes below n into *out; false when it is not one.
bool ParseKeep(const std::string& text, size_t n, std::vector<long>* out);

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_SHRINKER_H_
