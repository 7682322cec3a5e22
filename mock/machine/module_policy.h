// Whether the kernel of a simulated machine loads resmem.ko: what the firmware and the machine
// offer (the machine format's `module_policy` key), the kernel's reading of its command line
// (lockdown=, module.sig_enforce=) and of Secure Boot, and the load decision for the module and
// its hardware parameters. The same reading serves the simulator (which renders the policy's
// files from it and whose driver comes up, or is refused, as it decides) and the doctor (which
// explains a real machine's files with it and decides what loading resmem.ko there would do).
//
// The rules are Linux 6.1's with Debian's 6.1 configuration (the QEMU lane's kernel,
// /usr/src/linux-headers-6.1.0-56-amd64/.config): CONFIG_MODULE_SIG=y with
// CONFIG_MODULE_SIG_FORCE unset, CONFIG_SECURITY_LOCKDOWN_LSM=y (in CONFIG_LSM),
// CONFIG_LOCK_DOWN_KERNEL_FORCE_NONE=y, Debian's CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT=y,
// CONFIG_IMA=y with CONFIG_IMA_ARCH_POLICY=y. Sources (6.1):
//   security/lockdown/lockdown.c   lockdown_param (early_param "lockdown": integrity,
//                                  confidentiality; anything else -EINVAL), lock_kernel_down
//                                  ("Kernel is locked down from %s; see man kernel_lockdown.7";
//                                  only ever raises the level), lockdown_is_locked_down
//                                  ("Lockdown: %s: %s is restricted; see man kernel_lockdown.7")
//   include/linux/security.h       enum lockdown_reason: LOCKDOWN_MODULE_SIGNATURE and
//                                  LOCKDOWN_MODULE_PARAMETERS lie below LOCKDOWN_INTEGRITY_MAX
//   arch/x86/kernel/setup.c        Debian's patch (efi-lock-down-the-kernel-if-booted-in-secure-
//                                  boot-mode): with CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT, Secure
//                                  Boot locks down to integrity ("from EFI Secure Boot mode")
//   drivers/firmware/efi/secureboot.c  Debian's patch: "secureboot: Secure boot enabled"
//   security/integrity/ima/ima_efi.c   arch_get_ima_policy: Secure Boot with
//                                  CONFIG_IMA_ARCH_POLICY and CONFIG_MODULE_SIG calls
//                                  set_module_sig_enforced(), so sig_enforce reads Y
//   kernel/module/signing.c        sig_enforce (module.sig_enforce, bool_enable_only),
//                                  module_sig_check: unsigned -ENODATA "unsigned module",
//                                  untrusted key -ENOKEY "module with unavailable key"; enforced:
//                                  "Loading of %s is rejected", -EKEYREJECTED; else
//                                  security_locked_down(LOCKDOWN_MODULE_SIGNATURE): -EPERM; any
//                                  other error (a malformed signature: -EBADMSG) is fatal always
//   kernel/module/main.c           may_init_module: modules_disabled -> -EPERM before anything;
//                                  load_module: "%s: module verification failed: signature
//                                  and/or required key missing - tainting kernel" for a module
//                                  loaded without a valid signature
//   kernel/params.c                param_check_unsafe: a module_param_hw parameter under
//                                  LOCKDOWN_MODULE_PARAMETERS is -EPERM; parse_args prints
//                                  "%s: `%s' invalid for parameter `%s'" and the load fails;
//                                  parameq ('-' and '_' alike), param_set_bool_enable_only
//   lib/kstrtox.c                  kstrtobool: y Y 1 / n N 0 / on / off by the first characters
//   init/main.c                    do_early_param ("Malformed early option '%s'"), "--" ends the
//                                  kernel's parameters, unknown_bootoption drops an unused
//                                  dotted (module) parameter silently
// Not modelled: CONFIG_MODULE_SIG_FORCE and CONFIG_LOCK_DOWN_KERNEL_FORCE_* kernels (sig_enforce
// or lockdown from the configuration), the keyrings themselves (the machine lists the subjects
// the kernel trusts for modules: builtin, secondary and, on 6.1, MOKs through the machine
// keyring) and the cryptographic check (a signer named among them is taken as valid).
#ifndef RESMEM_MOCK_MACHINE_MODULE_POLICY_H_
#define RESMEM_MOCK_MACHINE_MODULE_POLICY_H_

#include <string>
#include <vector>

#include "backends/platform/module_policy_parsers.h"

namespace resmem::sim {

// resmem.ko as installed: absent, unsigned, or signed by the key of a certificate whose CN is
// `signer` (dkms 3.0.10: "DKMS module signing key", /var/lib/dkms/mok.key).
struct ModuleFileSpec {
  enum class State { kAbsent, kUnsigned, kSigned, kMalformed } state = State::kSigned;
  std::string signer = "DKMS module signing key";
  std::string error;  // kMalformed: why (only a real file is ever malformed)
};
// "absent", "unsigned", "signed:CN" (the machine format's resmem_ko); kMalformed: "malformed".
std::string ModuleFileWord(const ModuleFileSpec& f);
// The inverse for the machine format's three words; false for anything else.
bool ParseModuleFileWord(const std::string& word, ModuleFileSpec* f);

// The machine format's module_policy = { efi, secure_boot, modules_disabled, trusted_keys,
// resmem_ko, module_sig, lockdown_lsm }.
struct ModulePolicySpec {
  bool described = false;        // false: the machine says nothing; its files are not served
  bool efi = false;              // booted through EFI (/sys/firmware/efi exists)
  bool secure_boot = false;      // the SecureBoot variable is 1 (needs efi)
  bool modules_disabled = false; // /proc/sys/kernel/modules_disabled was set to 1 after boot
  bool module_sig = true;        // CONFIG_MODULE_SIG (Debian: y); false: no signature checks
  bool lockdown_lsm = true;      // the lockdown LSM is built in and enabled (Debian: y)
  std::vector<std::string> trusted_keys;  // the subjects of the keys the kernel verifies
                                          // modules with, as /proc/keys names them
  ModuleFileSpec resmem_ko;      // the installed module
};

// The kernel's module policy after boot.
struct ModuleKernel {
  bool modules_disabled = false;
  bool module_sig = true;
  bool sig_enforce = false;             // /sys/module/module/parameters/sig_enforce
  std::string sig_enforce_by;           // what turned it on ("Secure Boot", "module.sig_enforce=1
                                        // on the command line"); "" when off
  std::string sig_enforce_why;          // the kernel source of that rule
  bool lockdown_lsm = true;
  LockdownLevel lockdown = LockdownLevel::kNone;
  std::string lockdown_by;              // what locked it down ("Secure Boot", "lockdown=integrity
                                        // on the command line"); "" when not locked down
  std::string lockdown_why;             // the kernel source of that rule
  std::vector<std::string> trusted_keys;
  std::vector<std::string> dmesg;       // the boot's lines about Secure Boot and lockdown, and
                                        // the options the kernel refused
};

// The kernel's reading of `cmdline` (as /proc/cmdline reads) with the machine's policy.
ModuleKernel ReadModulePolicy(const std::string& cmdline, const ModulePolicySpec& spec);

// The Secure Boot state as the firmware files show it.
SecureBootState SecureBootOf(const ModulePolicySpec& spec);

// What loading a module does.
struct ModuleLoad {
  bool loaded = false;
  int err = 0;                     // the load's errno: EPERM, EKEYREJECTED, EBADMSG, ENOENT
  std::string refused_by;          // "modules_disabled", "sig_enforce", "lockdown", "signature"
                                   // (malformed), "parameters", "absent"; "" when loaded
  std::string why;                 // one sentence: what refused it, with the kernel source
  std::string rule;                // the kernel source and errno alone
                                   // ("kernel/module/signing.c module_sig_check: -EKEYREJECTED")
  std::vector<std::string> dmesg;  // the kernel's lines, in order
  std::string loader_error;        // what insmod prints ("insmod: ERROR: could not insert
                                   // module resmem.ko: Key was rejected by service")
  bool tainted = false;            // loaded without a valid signature
};

// Whether `kernel` loads module `name` installed as `ko`, given the hardware parameters
// `hw_params` ("ranges=64M$0x40000000"; module_param_hw, refused under lockdown). The loader
// is insmod (its name appears in the lockdown lines: "Lockdown: insmod: ...").
ModuleLoad DecideModuleLoad(const ModuleKernel& kernel, const ModuleFileSpec& ko,
                            const std::vector<std::string>& hw_params,
                            const std::string& name = "resmem");

// Whether a key the kernel trusts (its subject as /proc/keys names it) is `signer`'s.
bool SignerTrusted(const std::vector<std::string>& trusted_keys, const std::string& signer);

// The files' texts, in the forms backends/platform/module_policy_parsers.h reads.
std::string RenderLockdown(LockdownLevel level);          // "none [integrity] confidentiality\n"
std::string RenderSecureBootVariable(bool enabled);       // the efivar's 5 bytes
std::string RenderKeys(const std::vector<std::string>& trusted_keys);  // /proc/keys

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_MODULE_POLICY_H_
