// Parsers of the files that say whether this kernel will load a module, shared by the real
// Platform and the simulator (which renders the same texts from its machine model,
// mock/machine/module_policy.h), so the doctor reads both the same way:
//   /proc/sys/kernel/modules_disabled          "0\n" or "1\n" (kernel/sysctl.c, proc_dointvec)
//   /sys/kernel/security/lockdown              "none [integrity] confidentiality\n": the
//                                              bracketed word is the current level
//                                              (security/lockdown/lockdown.c lockdown_read); the
//                                              file is absent without the lockdown LSM or
//                                              with securityfs not mounted
//   /sys/module/module/parameters/sig_enforce  "Y\n" / "N\n" (kernel/params.c param_get_bool);
//                                              absent on kernels without CONFIG_MODULE_SIG
//   /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
//                                              efivarfs: 4 bytes of attributes (little-endian)
//                                              then the variable's 1 byte, 1 = enabled
//   /sys/firmware/efi/fw_platform_size         "64\n" / "32\n" on an EFI boot
//                                              (drivers/firmware/efi/efi.c); absent otherwise
//   /proc/keys                                 one key a line (security/keys/proc.c
//                                              proc_keys_show)
// Each parser accepts exactly what the kernel prints and says what it found otherwise.
#ifndef RESMEM_BACKENDS_PLATFORM_MODULE_POLICY_PARSERS_H_
#define RESMEM_BACKENDS_PLATFORM_MODULE_POLICY_PARSERS_H_

#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

constexpr const char* kModulesDisabledPath = "/proc/sys/kernel/modules_disabled";
constexpr const char* kLockdownPath = "/sys/kernel/security/lockdown";
constexpr const char* kSigEnforcePath = "/sys/module/module/parameters/sig_enforce";
constexpr const char* kSecureBootVarPath =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
constexpr const char* kFwPlatformSizePath = "/sys/firmware/efi/fw_platform_size";
constexpr const char* kKeysPath = "/proc/keys";
// The pseudo-source of the installed module's signature (backends/platform/module_signature.h):
// "module-signature:resmem" (the module depmod would load), "module-signature:/path/x.ko".
constexpr const char* kModuleSignatureSource = "module-signature:";

// "0\n" -> false, "1\n" -> true.
Result<bool> ParseModulesDisabled(const std::string& text);

// The kernel's lockdown levels, in order (include/linux/security.h enum lockdown_reason:
// LOCKDOWN_NONE < LOCKDOWN_INTEGRITY_MAX < LOCKDOWN_CONFIDENTIALITY_MAX); the words are the
// lockdown file's.
enum class LockdownLevel { kNone, kIntegrity, kConfidentiality };
const char* LockdownWord(LockdownLevel level);  // "none", "integrity", "confidentiality"
// The current level: the one bracketed word among none, integrity, confidentiality.
Result<LockdownLevel> ParseLockdown(const std::string& text);

// "Y\n" -> true, "N\n" -> false.
Result<bool> ParseSigEnforce(const std::string& text);

// The SecureBoot variable's bytes: 4 attribute bytes then the value; 1 = enabled, 0 = disabled.
Result<bool> ParseSecureBootVariable(const std::string& bytes);

// Secure Boot as the firmware files show it.
enum class SecureBootState {
  kEnabled,        // the variable reads 1
  kDisabled,       // the variable reads 0
  kEfiNoVariable,  // an EFI boot (fw_platform_size exists) without a readable variable:
                   // firmware without Secure Boot, or efivarfs not mounted
  kNotEfi,         // neither file: a legacy BIOS boot (or /sys/firmware/efi hidden)
};
const char* SecureBootStateText(SecureBootState s);  // "enabled", "disabled", ...

// The subject names of the asymmetric keys /proc/keys lists (type "asymmetri", the type name
// cut to 9 characters). The description is "SUBJECT: SKID_HEX" (crypto/asymmetric_keys/
// x509_public_key.c x509_key_preparse) followed by the type's ": X509.rsa ID []"; SUBJECT is
// the certificate's CN, or "O: CN" when the CN does not start with the O
// (x509_cert_parser.c x509_fabricate_name), so the subject ends before the first ": " that
// precedes the hex key id. A line that is not a key's is an error naming it.
Result<std::vector<std::string>> ParseKeySubjects(const std::string& text);

// Whether a key named `subject` (as ParseKeySubjects gives it) is the certificate a module's
// signature names by its issuer CN `signer`: the subject is the CN, or "O: CN".
bool KeySubjectMatches(const std::string& subject, const std::string& signer);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_MODULE_POLICY_PARSERS_H_
