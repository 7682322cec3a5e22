// The kernel's module policy and its load decision (module_policy.h names the sources).
#include "mock/machine/module_policy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "backends/platform/proc_parsers.h"

namespace resmem::sim {
namespace {

// The process that loads the module, as the lockdown lines name it (current->comm).
constexpr const char* kLoader = "insmod";

// kernel/params.c parameq: '-' and '_' are the same in a parameter's name.
bool ParamEq(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

// lib/kstrtox.c kstrtobool: decided by the first one or two characters.
std::optional<bool> KstrToBool(const std::string& s) {
  if (s.empty()) return std::nullopt;
  switch (s[0]) {
    case 'y': case 'Y': case '1': return true;
    case 'n': case 'N': case '0': return false;
    case 'o': case 'O':
      if (s.size() > 1 && (s[1] == 'n' || s[1] == 'N')) return true;
      if (s.size() > 1 && (s[1] == 'f' || s[1] == 'F')) return false;
      return std::nullopt;
    default: return std::nullopt;
  }
}

// The kernel's own parameters: everything before "--" (init/main.c; after it, init's).
std::vector<CmdlineOption> KernelOptions(const std::string& cmdline) {
  std::vector<CmdlineOption> out;
  for (const auto& o : ParseCmdlineOptions(cmdline)) {
    if (o.key == "--" && !o.has_value) break;
    out.push_back(o);
  }
  return out;
}

// security/lockdown/lockdown.c lock_kernel_down: raises the level, never lowers it.
void LockDown(ModuleKernel* k, const std::string& where, LockdownLevel level, const std::string& by,
              const std::string& why) {
  if (k->lockdown >= level) return;
  k->lockdown = level;
  k->lockdown_by = by;
  k->lockdown_why = why;
  k->dmesg.push_back("Kernel is locked down from " + where + "; see man kernel_lockdown.7");
}

// early_param("lockdown", lockdown_param): integrity or confidentiality; anything else (none
// too, and no value) is -EINVAL, which do_early_param reports as a malformed option.
void ReadLockdownOption(const CmdlineOption& o, ModuleKernel* k) {
  if (o.has_value && (o.value == "integrity" || o.value == "confidentiality")) {
    const LockdownLevel level =
        o.value == "integrity" ? LockdownLevel::kIntegrity : LockdownLevel::kConfidentiality;
    LockDown(k, "command line", level, "lockdown=" + o.value + " on the command line",
             "security/lockdown/lockdown.c lockdown_param");
    return;
  }
  k->dmesg.push_back("Malformed early option 'lockdown'");
}

// module.sig_enforce (kernel/module/signing.c: module_param(sig_enforce, bool_enable_only) with
// the prefix "module."): taken by parse_args("Booting kernel") after the early parameters.
void ReadSigEnforceOption(const CmdlineOption& o, ModuleKernel* k) {
  const std::optional<bool> v = o.has_value ? KstrToBool(o.value) : std::optional<bool>(true);
  if (!v) {
    k->dmesg.push_back("Booting kernel: `" + o.value + "' invalid for parameter `module.sig_enforce'");
    return;
  }
  if (*v && !k->sig_enforce) {
    k->sig_enforce = true;
    k->sig_enforce_by = o.key + (o.has_value ? "=" + o.value : "") + " on the command line";
    k->sig_enforce_why = "kernel/module/signing.c sig_enforce";
  }
}

std::string Errname(int err) { return std::strerror(err); }

}  // namespace

std::string ModuleFileWord(const ModuleFileSpec& f) {
  switch (f.state) {
    case ModuleFileSpec::State::kAbsent: return "absent";
    case ModuleFileSpec::State::kUnsigned: return "unsigned";
    case ModuleFileSpec::State::kSigned: return "signed:" + f.signer;
    case ModuleFileSpec::State::kMalformed: return "malformed";
  }
  return "absent";
}

bool ParseModuleFileWord(const std::string& word, ModuleFileSpec* f) {
  ModuleFileSpec out;
  if (word == "absent") out.state = ModuleFileSpec::State::kAbsent;
  else if (word == "unsigned") out.state = ModuleFileSpec::State::kUnsigned;
  else if (word.rfind("signed:", 0) == 0 && word.size() > 7) out.signer = word.substr(7);
  else return false;
  if (out.state != ModuleFileSpec::State::kSigned) out.signer.clear();
  *f = out;
  return true;
}

SecureBootState SecureBootOf(const ModulePolicySpec& spec) {
  if (!spec.efi) return SecureBootState::kNotEfi;
  return spec.secure_boot ? SecureBootState::kEnabled : SecureBootState::kDisabled;
}

ModuleKernel ReadModulePolicy(const std::string& cmdline, const ModulePolicySpec& spec) {
  ModuleKernel k;
  k.modules_disabled = spec.modules_disabled;
  k.module_sig = spec.module_sig;
  k.lockdown_lsm = spec.lockdown_lsm;
  k.trusted_keys = spec.trusted_keys;
  k.lockdown_why = spec.lockdown_lsm ? "neither lockdown= on the command line nor Secure Boot locks it down"
                                     : "the kernel has no lockdown LSM";
  const auto options = KernelOptions(cmdline);
  // Early parameters first (setup_arch: parse_early_param), then the EFI set-up.
  if (spec.lockdown_lsm)
    for (const auto& o : options)
      if (ParamEq(o.key, "lockdown")) ReadLockdownOption(o, &k);
  if (spec.efi) {
    k.dmesg.push_back(std::string("secureboot: Secure boot ") + (spec.secure_boot ? "enabled" : "disabled"));
    if (spec.secure_boot && spec.lockdown_lsm)
      LockDown(&k, "EFI Secure Boot mode", LockdownLevel::kIntegrity, "Secure Boot",
               "Debian's CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT, arch/x86/kernel/setup.c");
  }
  // Without CONFIG_MODULE_SIG there is no module.sig_enforce: an unused dotted parameter,
  // dropped silently (init/main.c unknown_bootoption).
  if (spec.module_sig) {
    for (const auto& o : options)
      if (ParamEq(o.key, "module.sig_enforce")) ReadSigEnforceOption(o, &k);
    if (spec.efi && spec.secure_boot && !k.sig_enforce) {
      k.sig_enforce = true;
      k.sig_enforce_by = "Secure Boot";
      k.sig_enforce_why = "IMA's arch policy: security/integrity/ima/ima_efi.c arch_get_ima_policy, "
                          "CONFIG_IMA_ARCH_POLICY=y";
    }
  }
  return k;
}

bool SignerTrusted(const std::vector<std::string>& trusted_keys, const std::string& signer) {
  for (const auto& subject : trusted_keys)
    if (KeySubjectMatches(subject, signer)) return true;
  return false;
}

namespace {

// kernel/module/signing.c module_sig_check. True when the load goes on (signed by a trusted
// key, or not enforced: then tainted); otherwise `l` holds the refusal.
bool SignatureAllows(const ModuleKernel& k, const ModuleFileSpec& ko, const std::string& name,
                     ModuleLoad* l) {
  using S = ModuleFileSpec::State;
  if (ko.state == S::kSigned && SignerTrusted(k.trusted_keys, ko.signer)) return true;
  const bool no_pkcs7 = ko.state == S::kMalformed && ko.error.find("-ENOPKG") != std::string::npos;
  if (ko.state == S::kMalformed && !no_pkcs7) {
    l->err = EBADMSG;
    l->refused_by = "signature";
    l->rule = "kernel/module/signing.c module_sig_check: -EBADMSG";
    l->why = name + ".ko's signature is malformed (" + ko.error + "): the kernel refuses it whether or "
             "not signatures are enforced (" + l->rule + ")";
    return false;
  }
  const std::string reason = ko.state == S::kUnsigned ? "unsigned module"
                             : no_pkcs7              ? "module with unsupported crypto"
                                                     : "module with unavailable key";
  const std::string what = ko.state == S::kUnsigned ? name + ".ko is unsigned"
                           : no_pkcs7 ? name + ".ko is not signed with a PKCS#7 message"
                                      : name + ".ko is signed by '" + ko.signer +
                                            "', a key the kernel does not trust";
  if (k.sig_enforce) {
    l->err = EKEYREJECTED;
    l->refused_by = "sig_enforce";
    l->dmesg.push_back("Loading of " + reason + " is rejected");
    l->rule = "kernel/module/signing.c module_sig_check: -EKEYREJECTED";
    l->why = what + ", and signatures are enforced (sig_enforce=Y, set by " + k.sig_enforce_by + ": " +
             k.sig_enforce_why + "; " + l->rule + ")";
    return false;
  }
  if (k.lockdown_lsm && k.lockdown >= LockdownLevel::kIntegrity) {
    l->err = EPERM;
    l->refused_by = "lockdown";
    l->dmesg.push_back(std::string("Lockdown: ") + kLoader +
                       ": unsigned module loading is restricted; see man kernel_lockdown.7");
    l->rule = "kernel/module/signing.c module_sig_check, security_locked_down(LOCKDOWN_MODULE_SIGNATURE): -EPERM";
    l->why = what + ", and the kernel is locked down (" + LockdownWord(k.lockdown) + ", by " + k.lockdown_by +
             ": " + k.lockdown_why + "; " + l->rule + ")";
    return false;
  }
  l->tainted = true;
  l->dmesg.push_back(name + ": module verification failed: signature and/or required key missing - "
                     "tainting kernel");
  return true;
}

}  // namespace

ModuleLoad DecideModuleLoad(const ModuleKernel& k, const ModuleFileSpec& ko,
                            const std::vector<std::string>& hw_params, const std::string& name) {
  ModuleLoad l;
  const std::string file = name + ".ko";
  auto refused = [&]() {
    l.loader_error = std::string(kLoader) + ": ERROR: could not insert module " + file + ": " + Errname(l.err);
    return l;
  };
  if (ko.state == ModuleFileSpec::State::kAbsent) {
    l.err = ENOENT;
    l.refused_by = "absent";
    l.rule = "modprobe finds no " + file + " under /lib/modules/RELEASE";
    l.why = file + " is not installed for this kernel (install resmem-dkms with this kernel's headers)";
    l.loader_error = "modprobe: FATAL: Module " + name + " not found";
    return l;
  }
  if (k.modules_disabled) {
    l.err = EPERM;
    l.refused_by = "modules_disabled";
    l.rule = "kernel/module/main.c may_init_module: -EPERM";
    l.why = "/proc/sys/kernel/modules_disabled is 1: no module loads until the next boot (" + l.rule + ")";
    return refused();
  }
  if (k.module_sig && !SignatureAllows(k, ko, name, &l)) return refused();
  // kernel/params.c: each module_param_hw parameter under lockdown, in order; parse_args goes
  // through all of them and the load fails with the error.
  if (k.lockdown_lsm && k.lockdown >= LockdownLevel::kIntegrity) {
    for (const auto& p : hw_params) {
      const size_t eq = p.find('=');
      l.dmesg.push_back(std::string("Lockdown: ") + kLoader +
                        ": unsafe module parameters is restricted; see man kernel_lockdown.7");
      l.dmesg.push_back(name + ": `" + (eq == std::string::npos ? "" : p.substr(eq + 1)) +
                        "' invalid for parameter `" + p.substr(0, eq) + "'");
    }
    if (!hw_params.empty()) {
      l.err = EPERM;
      l.refused_by = "parameters";
      l.rule = "kernel/params.c param_check_unsafe: -EPERM";
      l.why = "the kernel is locked down (" + std::string(LockdownWord(k.lockdown)) + ", by " +
              k.lockdown_by + ") and refuses the hardware parameters ranges=, phys=, size= (" + l.rule +
              "); loaded without them the driver serves what memmap= reserved";
      return refused();
    }
  }
  l.loaded = true;
  return l;
}

std::string RenderLockdown(LockdownLevel level) {
  // security/lockdown/lockdown.c lockdown_read: every level, the current one in brackets.
  std::string out;
  for (auto l : {LockdownLevel::kNone, LockdownLevel::kIntegrity, LockdownLevel::kConfidentiality}) {
    if (!out.empty()) out += " ";
    out += l == level ? std::string("[") + LockdownWord(l) + "]" : LockdownWord(l);
  }
  return out + "\n";
}

std::string RenderSecureBootVariable(bool enabled) {
  // efivarfs: the attributes (EFI_VARIABLE_BOOTSERVICE_ACCESS | RUNTIME_ACCESS = 0x6, as firmware
  // sets them on SecureBoot) little-endian, then the 1-byte value.
  return std::string("\x06\x00\x00\x00", 4) + (enabled ? '\x01' : '\x00');
}

std::string RenderKeys(const std::vector<std::string>& trusted_keys) {
  // security/keys/proc.c proc_keys_show's columns; serials and key ids are made up from the
  // subject (FNV-1a), stable from run to run.
  auto fnv = [](const std::string& s, uint32_t basis) {
    uint32_t h = basis;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
  };
  char line[160];
  std::snprintf(line, sizeof line, "%08x I------     1 perm 1f0b0000     0     0 %-9.9s %s\n",
                fnv(".builtin_trusted_keys", 2166136261u), "keyring", ".builtin_trusted_keys: 1");
  std::string out = line;
  for (const auto& subject : trusted_keys) {
    std::string skid;
    for (uint32_t i = 0; i < 5; ++i) {
      std::snprintf(line, sizeof line, "%08x", fnv(subject, 2166136261u + i));
      skid += line;
    }
    std::snprintf(line, sizeof line, "%08x I------     1 perm 1f030000     0     0 %-9.9s ",
                  fnv(subject, 2166136261u), "asymmetri");
    out += line + subject + ": " + skid + ": X509.rsa " + skid.substr(32) + " []\n";
  }
  return out;
}

}  // namespace resmem::sim
