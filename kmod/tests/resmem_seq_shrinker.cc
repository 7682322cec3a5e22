// resmem_seq's shrinker (resmem_seq_shrinker.h).
#include "kmod/tests/resmem_seq_shrinker.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kmod/tests/resmem_seq_util.h"

namespace resmem::seq {

std::string Signature(const std::string& msg) {
  size_t a = msg.find("): ");
  std::string s = a == std::string::npos ? msg : msg.substr(a + 3);
  size_t b = s.find_first_of("(:");
  return s.substr(0, std::min<size_t>(b, 40));
}

std::vector<long> Shrink(const RunList& run, std::vector<long> keep, double budget_s, const std::string& signature,
                         int* runs) {
  double t0 = Now();
  size_t n = 2;
  while (keep.size() >= 2 && Now() - t0 < budget_s) {
    size_t chunk = (keep.size() + n - 1) / n;
    bool reduced = false;
    for (size_t i = 0; i < n && Now() - t0 < budget_s; ++i) {
      std::vector<long> comp;
      for (size_t j = 0; j < keep.size(); ++j)
        if (j / chunk != i) comp.push_back(keep[j]);
      if (comp.empty() || comp.size() == keep.size()) continue;
      ++*runs;
      std::string f = run(comp);
      if (!f.empty() && Signature(f) == signature) {
        keep = comp;
        n = std::max<size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= keep.size()) break;
      n = std::min(keep.size(), n * 2);
    }
  }
  return keep;
}

std::string KeepList(const std::vector<long>& keep) {
  std::string s;
  for (size_t i = 0; i < keep.size();) {
    size_t j = i;
    while (j + 1 < keep.size() && keep[j + 1] == keep[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (j == i ? Fmt("%ld", keep[i]) : Fmt("%ld-%ld", keep[i], keep[j]));
    i = j + 1;
  }
  return s;
}

bool ParseKeep(const std::string& text, size_t n, std::vector<long>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    long a, b;
    if (std::sscanf(item.c_str(), "%ld-%ld", &a, &b) == 2) {
    } else if (std::sscanf(item.c_str(), "%ld", &a) == 1) {
      b = a;
    } else {
      return false;
    }
    if (a < 0 || b < a || static_cast<size_t>(b) >= n) return false;
    for (long i = a; i <= b; ++i) out->push_back(i);
  }
  return true;
}

}  // namespace resmem::seq
