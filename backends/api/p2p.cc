#include "backends/api/p2p.h"

#include <cinttypes>
#include <cstdio>

namespace resmem {

const char* PciePathName(PciePath path) {
  switch (path) {
    case PciePath::kSameSwitch: return "same-switch";
    case PciePath::kThroughCpu: return "through-cpu";
    case PciePath::kCrossSocket: return "cross-socket";
  }
  return "?";
}

const char* UnpinPolicyName(UnpinPolicy policy) {
  switch (policy) {
    case UnpinPolicy::kAfterEach: return "after-each";
    case UnpinPolicy::kNever: return "never";
    case UnpinPolicy::kLazy: return "lazy";
  }
  return "?";
}

std::string DescribeTokens(const P2pTokens& tokens) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "p2pToken 0x%" PRIx64 " vaSpaceToken 0x%" PRIx32, tokens.p2p_token,
                tokens.va_space_token);
  return buf;
}

}  // namespace resmem
