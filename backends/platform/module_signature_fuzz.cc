// Fuzz target: the appended module signature and the module policy's files
// (backends/platform/module_signature.h, module_policy_parsers.h). The input goes whole to the
// signature parser as a module, then as the PKCS#7 message inside a well-formed trailer (so the
// DER walker sees every byte), and as text to the policy parsers and the pseudo-source's reader.
// Properties: no crash, hang or OOM; a signature that parses is signed with a known state and
// its facts render to a text that reads back the same; a signature of the trailer form that
// parses names its signer or key id and a hash.
#include <cstdint>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/module_signature.h"

namespace {

// `pkcs7` after a one-byte module body, with the 12-byte struct (id_type 2) and the magic.
std::string InTrailer(const std::string& pkcs7) {
  const uint32_t n = static_cast<uint32_t>(pkcs7.size());
  std::string ms = {0, 0, 2, 0, 0, 0, 0, 0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                    static_cast<char>(n >> 8), static_cast<char>(n)};
  return "M" + pkcs7 + ms + std::string(resmem::kModuleSigMagic);
}

void CheckRoundTrip(const resmem::ModuleSignature& s) {
  resmem::ModuleSignatureFacts f;
  f.file = "/f.ko";
  f.state = s.is_signed ? "yes" : "no";
  f.signature = s;
  auto back = resmem::ParseModuleSignatureFacts(resmem::RenderModuleSignatureFacts(f));
  if (!back.ok()) resmem::fuzz::Finding("rendered signature facts do not read back: " + back.status().message());
  if (s.is_signed && back.value().signature.serial_hex != s.serial_hex)
    resmem::fuzz::Finding("the serial does not read back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (auto s = ParseModuleSignature(bytes); s.ok()) CheckRoundTrip(s.value());
  if (auto s = ParseModuleSignature(InTrailer(bytes)); s.ok()) {
    if (!s.value().is_signed || s.value().signer_count < 1 || s.value().hash.empty())
      fuzz::Finding("a parsed PKCS#7 message without a signer or a hash");
    if (s.value().signer.empty() && s.value().serial_hex.empty() && s.value().key_id_hex.empty())
      fuzz::Finding("a parsed SignerInfo that names no key");
    CheckRoundTrip(s.value());
  }
  (void)ParseModulesDisabled(bytes);
  (void)ParseLockdown(bytes);
  (void)ParseSigEnforce(bytes);
  (void)ParseSecureBootVariable(bytes);
  if (auto keys = ParseKeySubjects(bytes); keys.ok())
    for (const auto& k : keys.value())
      if (k.find('\n') != std::string::npos) fuzz::Finding("a key subject spanning lines");
  (void)ParseModuleSignatureFacts(bytes);
  return 0;
}
