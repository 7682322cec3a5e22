// The doctor's part about loading resmem.ko (module_policy_doctor.h).
#include "engine/doctor/module_policy_doctor.h"

#include <cerrno>

namespace resmem::engine {
namespace {

using Policy = MachineFacts::ModulePolicy;

bool Absent(const Status& s) { return s.space() == ErrorSpace::kErrno && s.code() == ENOENT; }

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

std::string Joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

// What the files say, before the rules fill in what they do not.
struct Read {
  bool lockdown = false;
  LockdownLevel lockdown_level = LockdownLevel::kNone;
  bool sig_enforce = false;
  bool sig_enforce_on = false;
};

// Secure Boot from the efivar; where it does not read, fw_platform_size tells an EFI boot without
// the variable from a legacy boot.
void ReadSecureBoot(Platform& platform, MachineFacts& f) {
  Policy& m = f.module_policy;
  auto var = platform.ReadSource(kSecureBootVarPath);
  auto on = var.ok() ? ParseSecureBootVariable(*var) : Result<bool>(var.status());
  if (on.ok()) {
    m.secure_boot = *on ? SecureBootState::kEnabled : SecureBootState::kDisabled;
    m.secure_boot_source = std::string("the SecureBoot efivar reads ") + (*on ? "1" : "0");
    return;
  }
  if (var.ok()) f.unreadable.push_back(std::string(kSecureBootVarPath) + ": " + on.status().message());
  const bool efi = platform.ReadSource(kFwPlatformSizePath).ok();
  m.secure_boot = efi ? SecureBootState::kEfiNoVariable : SecureBootState::kNotEfi;
  m.secure_boot_source = efi ? std::string(kFwPlatformSizePath) + " exists, the SecureBoot efivar does not "
                               "read (firmware without Secure Boot, or efivarfs not mounted)"
                             : std::string("neither the SecureBoot efivar nor ") + kFwPlatformSizePath + " exists";
}

// lockdown, sig_enforce, Secure Boot and /proc/keys (module_policy_parsers.h).
Read ReadPolicyFiles(Platform& platform, MachineFacts& f) {
  Policy& m = f.module_policy;
  Read r;
  auto unreadable = [&](const std::string& path, const Status& s) { f.unreadable.push_back(path + ": " + s.message()); };
  if (auto text = platform.ReadSource(kLockdownPath); text.ok()) {
    auto level = ParseLockdown(*text);
    if (level.ok()) {
      r.lockdown = true;
      r.lockdown_level = *level;
      m.lockdown_source = std::string(kLockdownPath) + " reads '" + TrimBlanks(*text) + "'";
    } else {
      unreadable(kLockdownPath, level.status());
    }
  } else if (!Absent(text.status())) {
    unreadable(kLockdownPath, text.status());
  }
  if (auto text = platform.ReadSource(kSigEnforcePath); text.ok()) {
    auto on = ParseSigEnforce(*text);
    if (on.ok()) {
      r.sig_enforce = true;
      r.sig_enforce_on = *on;
    } else {
      unreadable(kSigEnforcePath, on.status());
    }
  } else if (Absent(text.status())) {
    m.module_sig = false;  // kernel/module/signing.c is built only with CONFIG_MODULE_SIG
  } else {
    unreadable(kSigEnforcePath, text.status());
  }
  ReadSecureBoot(platform, f);
  if (auto text = platform.ReadSource(kKeysPath); text.ok()) {
    auto keys = ParseKeySubjects(*text);
    if (keys.ok()) {
      m.keys_known = true;
      m.keys = *keys;
    } else {
      unreadable(kKeysPath, keys.status());
    }
  } else {
    unreadable(kKeysPath, text.status());
  }
  return r;
}

// The kernel the load is decided with: the rules' reading of /proc/cmdline on this firmware,
// with what the files said put over it; each "why" says which.
void ComposeKernel(const MachineFacts& f, const Read& r, Policy& m) {
  sim::ModulePolicySpec spec;
  spec.described = true;
  spec.efi = m.secure_boot != SecureBootState::kNotEfi;
  spec.secure_boot = m.secure_boot == SecureBootState::kEnabled;
  spec.modules_disabled = m.modules_disabled;
  spec.module_sig = m.module_sig;
  spec.trusted_keys = m.keys;
  m.rules = sim::ReadModulePolicy(f.cmdline, spec);
  m.kernel = m.rules;
  if (r.lockdown) {
    m.kernel.lockdown = r.lockdown_level;
    if (r.lockdown_level != m.rules.lockdown) {
      m.kernel.lockdown_by = "this kernel's configuration";
      m.kernel.lockdown_why = std::string("CONFIG_LOCK_DOWN_KERNEL_FORCE_*, or a write to the lockdown file; "
                              "Debian 6.1's rules predict ") + LockdownWord(m.rules.lockdown) + " here";
    }
  } else if (m.rules.lockdown != LockdownLevel::kNone) {
    m.lockdown_source = std::string(kLockdownPath) + " is absent (securityfs not mounted?); predicted " +
                        LockdownWord(m.rules.lockdown) + " by " + m.rules.lockdown_by;
  } else {
    m.kernel.lockdown_lsm = false;
    m.lockdown_source = std::string(kLockdownPath) + " is absent: no lockdown LSM, or securityfs not mounted";
  }
  if (r.sig_enforce) {
    m.kernel.sig_enforce = r.sig_enforce_on;
    if (r.sig_enforce_on && !m.rules.sig_enforce) {
      m.kernel.sig_enforce_by = "this kernel's configuration";
      m.kernel.sig_enforce_why = "CONFIG_MODULE_SIG_FORCE, or a write to sig_enforce; Debian 6.1's rules "
                                 "predict N here";
    }
    if (!r.sig_enforce_on) {
      m.kernel.sig_enforce_by.clear();
      m.kernel.sig_enforce_why.clear();
    }
  }
}

// The module's signature through the pseudo-source.
void ReadModule(Platform& platform, const std::string& module, MachineFacts& f) {
  Policy& m = f.module_policy;
  m.module_source = kModuleSignatureSource + module;
  auto text = platform.ReadSource(m.module_source);
  if (!text.ok()) {
    m.module_absent = Absent(text.status());
    m.module_error = text.status().message();
    if (!m.module_absent) f.unreadable.push_back(m.module_source + ": " + m.module_error);
    return;
  }
  auto facts = ParseModuleSignatureFacts(*text);
  if (!facts.ok()) {
    m.module_error = facts.status().message();
    f.unreadable.push_back(m.module_source + ": " + m.module_error);
    return;
  }
  m.module_read = true;
  m.module = *facts;
}

// "resmem" from "/lib/modules/V/updates/dkms/resmem.ko.xz".
std::string ModuleName(const Policy& m, const std::string& module) {
  std::string base = m.module_read ? m.module.file : module;
  base = base.substr(base.find_last_of('/') == std::string::npos ? 0 : base.find_last_of('/') + 1);
  return base.substr(0, base.find(".ko"));
}

sim::ModuleFileSpec KoOf(const Policy& m) {
  sim::ModuleFileSpec ko;
  ko.signer.clear();
  if (m.module_absent) ko.state = sim::ModuleFileSpec::State::kAbsent;
  else if (m.module.state == "no") ko.state = sim::ModuleFileSpec::State::kUnsigned;
  else if (m.module.state == "malformed") ko.state = sim::ModuleFileSpec::State::kMalformed;
  else ko.signer = m.module.signature.signer;
  ko.error = m.module.error;
  return ko;
}

bool Enforced(const sim::ModuleKernel& k) {
  return k.module_sig && (k.sig_enforce || (k.lockdown_lsm && k.lockdown >= LockdownLevel::kIntegrity));
}

// `modprobe resmem` (no parameters) with the kernel above, where enough is known.
void Decide(const std::string& module, Policy& m) {
  if (!m.module_absent && !m.module_read) {
    m.undecided_why = "the module's signature could not be read (" + m.module_error + ")";
    return;
  }
  const sim::ModuleFileSpec ko = KoOf(m);
  if (ko.state == sim::ModuleFileSpec::State::kSigned && Enforced(m.kernel)) {
    if (ko.signer.empty()) {
      m.undecided_why = "the module names its signing key by id " + m.module.signature.key_id_hex +
                        ", and /proc/keys names keys by subject: whether the kernel trusts it cannot be told here";
      return;
    }
    if (m.keys.empty()) {
      m.undecided_why = m.keys_known ? "/proc/keys lists no asymmetric key (it shows only keys the reader may "
                                       "view: run as root)"
                                     : "/proc/keys cannot be read";
      return;
    }
  }
  m.decided = true;
  m.load = sim::DecideModuleLoad(m.kernel, ko, {}, ModuleName(m, module));
}

}  // namespace

void CollectModulePolicy(Platform& platform, const std::string& module, MachineFacts& f) {
  Policy& m = f.module_policy;
  auto disabled = platform.ReadSource(kModulesDisabledPath);
  auto value = disabled.ok() ? ParseModulesDisabled(*disabled) : Result<bool>(disabled.status());
  if (!value.ok()) {
    // A kernel without modules (or a machine that does not describe its policy): nothing to
    // decide; a file named with --module still has a signature to show.
    f.unreadable.push_back(std::string(kModulesDisabledPath) + ": " + value.status().message());
    m.undecided_why = "the kernel's module policy cannot be read (" + std::string(kModulesDisabledPath) +
                      ": " + value.status().message() + ")";
    if (!module.empty() && module[0] == '/') ReadModule(platform, module, f);
    return;
  }
  m.known = true;
  m.modules_disabled = *value;
  const Read r = ReadPolicyFiles(platform, f);
  ComposeKernel(f, r, m);
  ReadModule(platform, module, f);
  Decide(module, m);
}

namespace {

// What refuses the signature on this kernel, as the finding's title names it.
std::string Enforcer(const sim::ModuleLoad& l, const sim::ModuleKernel& k) {
  if (l.refused_by == "sig_enforce") return "signatures are enforced (sig_enforce=Y, set by " + k.sig_enforce_by + ")";
  if (l.refused_by == "lockdown")
    return std::string("the kernel is locked down (") + LockdownWord(k.lockdown) + ", by " + k.lockdown_by + ")";
  return "the kernel refuses that whatever the policy";
}

// The state of the module's signature in a few words.
std::string ModuleState(const Policy& m) {
  if (m.module_absent) return "not installed (" + m.module_error + ")";
  if (!m.module_read) return "unreadable (" + m.module_error + ")";
  const ModuleSignature& s = m.module.signature;
  if (m.module.state == "no") return m.module.file + ": unsigned";
  if (m.module.state == "malformed") return m.module.file + ": malformed signature (" + m.module.error + ")";
  const std::string by = s.signer.empty() ? "key id " + s.key_id_hex : Quoted(s.signer);
  return m.module.file + ": signed by " + by + (s.hash.empty() ? "" : " (" + s.hash + ")");
}

std::string KeysText(const Policy& m) {
  if (!m.keys_known) return "/proc/keys unreadable";
  return "/proc/keys trusts " + (m.keys.empty() ? std::string("no asymmetric key (read as root)")
                                                : Joined(m.keys, ", "));
}

// The policy's state, one clause each, for evidence.
std::string PolicyEvidence(const Policy& m) {
  const sim::ModuleKernel& k = m.kernel;
  std::string e = "Secure Boot: " + std::string(SecureBootStateText(m.secure_boot)) + " (" + m.secure_boot_source + ")";
  e += "; sig_enforce: " + std::string(!m.module_sig ? "absent (no CONFIG_MODULE_SIG)" : k.sig_enforce ? "Y" : "N") +
       (k.sig_enforce ? " (set by " + k.sig_enforce_by + ": " + k.sig_enforce_why + ")" : "");
  e += std::string("; lockdown: ") + (k.lockdown_lsm ? LockdownWord(k.lockdown) : "none") + " (" + m.lockdown_source +
       (k.lockdown_lsm && k.lockdown != LockdownLevel::kNone ? "; by " + k.lockdown_by + ": " + k.lockdown_why : "") + ")";
  return e + "; " + KeysText(m);
}

std::string WhatTheKernelPrints(const sim::ModuleLoad& l) {
  std::string lines;
  for (const auto& d : l.dmesg) lines += (lines.empty() ? "" : ", ") + Quoted(d);
  return "loading it, the kernel prints " + (lines.empty() ? std::string("nothing") : lines) +
         " and insmod says " + Quoted(l.loader_error);
}

// The way out of a refused signature, by what is wrong with it.
std::string SignatureRemedy(const Policy& m, const std::string& cmdline) {
  const std::string enroll =
      "dkms (package resmem-dkms) signs resmem.ko with /var/lib/dkms/mok.key (its certificate "
      "/var/lib/dkms/mok.pub, CN 'DKMS module signing key' on Debian's dkms 3.0.10): enroll it as a "
      "Machine Owner Key with `mokutil --import /var/lib/dkms/mok.pub` (it asks for a one-time "
      "password), reboot, choose 'Enroll MOK' in MokManager and confirm with that password; the key "
      "then shows in /proc/keys and `mokutil --list-enrolled`, and `modprobe resmem` loads. Or sign "
      "resmem.ko with a key already enrolled (scripts/sign-file sha256 KEY CERT resmem.ko, shipped "
      "in linux-kbuild as /usr/lib/linux-kbuild-*/scripts/sign-file)";
  std::string r;
  if (m.module.state == "malformed")
    r = "re-sign the module (reinstall it through dkms, or scripts/sign-file): a damaged signature is "
        "refused whatever the policy; then ";
  else if (m.module.state == "no")
    r = "install the module through dkms, which signs it (a module built by hand with make is "
        "unsigned), or sign it yourself; then: ";
  r += enroll;
  if (cmdline.find("sig_enforce") != std::string::npos) r += ". module.sig_enforce= on the command line enforces signatures too: drop it";
  if (cmdline.find("lockdown=") != std::string::npos) r += ". lockdown= on the command line locks the kernel down too: drop it";
  return r;
}

Finding SignatureRejected(const MachineFacts& f, const sim::ModuleLoad& l) {
  const Policy& m = f.module_policy;
  const std::string what = m.module.state == "no" ? "is unsigned"
                           : m.module.state == "malformed"
                               ? "has a malformed signature"
                               : "is signed by " + Quoted(m.module.signature.signer) + ", a key the kernel does not trust";
  const std::string name = ModuleName(m, "resmem") + ".ko";
  return {"module-signature-rejected", "error",
          "the kernel refuses " + name + ": it " + what + ", and " + Enforcer(l, m.kernel),
          ModuleState(m) + "; " + PolicyEvidence(m) + "; " + WhatTheKernelPrints(l) + " (" + l.rule + ")",
          SignatureRemedy(m, f.cmdline), ""};
}

// The lines the kernel prints for `modprobe resmem ranges=...` under this lockdown.
std::string RefusedParameterLines(const MachineFacts& f) {
  sim::ModuleKernel k = f.module_policy.kernel;
  k.modules_disabled = false;
  k.module_sig = false;  // the parameters alone
  std::string value = "64M$0x40000000";
  if (!f.reservations.empty()) {
    const std::string& o = f.reservations[0].option;
    value = o.substr(o.find('=') + 1);
  }
  const sim::ModuleLoad l = sim::DecideModuleLoad(k, sim::ModuleFileSpec{}, {"ranges=" + value});
  std::string lines;
  for (const auto& d : l.dmesg) lines += (lines.empty() ? "" : ", ") + Quoted(d);
  return "`modprobe resmem ranges=" + value + "` prints " + lines + " and fails with EPERM";
}

Finding LockdownRefusesAddresses(const MachineFacts& f) {
  const Policy& m = f.module_policy;
  std::string served;
  for (const auto& r : f.reservations) served += (served.empty() ? "" : ", ") + r.option;
  return {"lockdown-refuses-addresses", "warning",
          std::string("the kernel is locked down (") + LockdownWord(m.kernel.lockdown) +
              "): it refuses resmem's hardware parameters ranges=, phys= and size=",
          m.lockdown_source + "; locked down by " + m.kernel.lockdown_by + " (" + m.kernel.lockdown_why + "); " +
              RefusedParameterLines(f) +
              " (kernel/params.c param_check_unsafe, LOCKDOWN_MODULE_PARAMETERS)",
          "load resmem without them: `modprobe resmem`, with no `options resmem ...` line in "
          "/etc/modprobe.d; the driver then serves the ranges memmap= reserved out of RAM (docs/kmod.md, "
          "\"Without addresses: lockdown and Secure Boot\")" +
              (served.empty() ? std::string("; this command line reserves nothing yet: boot with memmap=SIZE$ADDR over System RAM")
                              : "; here: " + served),
          ""};
}

Finding SecureBootOn(const Policy& m) {
  std::string module = ModuleState(m);
  if (m.module_read && m.module.state == "yes" && !m.module.signature.signer.empty() && !m.keys.empty())
    module += sim::SignerTrusted(m.keys, m.module.signature.signer) ? ", a key the kernel trusts"
                                                                    : ", a key the kernel does not trust";
  if (!m.decided) module += "; whether it loads cannot be told: " + m.undecided_why;
  return {"secure-boot", "info",
          std::string("Secure Boot is on: the kernel loads only modules signed by a key it trusts") +
              (m.kernel.lockdown >= LockdownLevel::kIntegrity && m.kernel.lockdown_lsm
                   ? std::string(", and is locked down (") + LockdownWord(m.kernel.lockdown) + ")"
                   : ""),
          PolicyEvidence(m) + "; " + module,
          "keep resmem.ko signed by an enrolled key: dkms signs it with /var/lib/dkms/mok.key; enroll "
          "that key once with `mokutil --import /var/lib/dkms/mok.pub`, reboot and confirm in MokManager. "
          "`mokutil --sb-state` and `mokutil --list-enrolled` show the state",
          ""};
}

}  // namespace

void AddModulePolicyFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  const Policy& m = f.module_policy;
  if (!m.known) return;
  if (m.modules_disabled)
    add({"modules-disabled", "error",
         "module loading is disabled: no module loads until the next boot, resmem.ko included",
         std::string(kModulesDisabledPath) + " reads 1; kernel/module/main.c may_init_module refuses every "
         "load with EPERM ('insmod: ERROR: could not insert module resmem.ko: Operation not permitted'); "
         "a module loaded before it was set stays (lsmod)",
         "the switch is one-way (Documentation/admin-guide/sysctl/kernel.rst, modules_disabled): find "
         "what sets it (kernel.modules_disabled=1 in /etc/sysctl.d/ or /usr/lib/sysctl.d/, a hardening "
         "script or unit) and load resmem before it runs (a line `resmem` in "
         "/etc/modules-load.d/resmem.conf), or drop the setting; then reboot",
         ""});
  if (m.decided && m.load.refused_by != "absent") {
    // The signature's verdict as if modules were allowed: both problems are named at once.
    sim::ModuleKernel k = m.kernel;
    k.modules_disabled = false;
    const sim::ModuleLoad l = sim::DecideModuleLoad(k, KoOf(m), {}, ModuleName(m, "resmem"));
    if (l.refused_by == "sig_enforce" || l.refused_by == "lockdown" || l.refused_by == "signature")
      add(SignatureRejected(f, l));
  }
  if (m.kernel.lockdown_lsm && m.kernel.lockdown >= LockdownLevel::kIntegrity) add(LockdownRefusesAddresses(f));
  if (m.secure_boot == SecureBootState::kEnabled) add(SecureBootOn(m));
}

void RenderModulePolicy(const Policy& m, std::ostream& out) {
  if (!m.known) {
    if (m.module_read || !m.module_error.empty())
      out << "  module: " << ModuleState(m) << " (the kernel's module policy cannot be read here)\n";
    return;
  }
  const sim::ModuleKernel& k = m.kernel;
  out << "  module policy: Secure Boot: " << SecureBootStateText(m.secure_boot) << "; lockdown: "
      << (k.lockdown_lsm ? LockdownWord(k.lockdown) : "none (no lockdown file)") << "; sig_enforce: "
      << (!m.module_sig ? "absent" : k.sig_enforce ? "Y" : "N") << "; modules_disabled: "
      << (m.modules_disabled ? 1 : 0) << "; " << KeysText(m) << "\n";
  out << "  module: " << ModuleState(m) << "\n";
  out << "  load: ";
  if (!m.decided) out << "cannot tell: " << m.undecided_why;
  else if (m.load.loaded) out << "loads" << (m.load.tainted ? " (taints the kernel: no trusted signature)" : "");
  else out << "refused (" << ErrnoName(m.load.err) << "): " << m.load.loader_error;
  out << "\n";
}

nlohmann::ordered_json ModulePolicyJson(const Policy& m) {
  nlohmann::ordered_json j;
  using J = nlohmann::ordered_json;
  j["known"] = m.known;
  const sim::ModuleKernel& k = m.kernel;
  // Unknown facts are null, never a default that reads like a fact.
  j["modules_disabled"] = m.known ? J(m.modules_disabled) : J(nullptr);
  j["secure_boot"] = m.known ? J(SecureBootStateText(m.secure_boot)) : J(nullptr);
  j["lockdown"] = m.known ? J(k.lockdown_lsm ? LockdownWord(k.lockdown) : "none") : J(nullptr);
  j["lockdown_source"] = m.lockdown_source;
  j["lockdown_by"] = m.known ? k.lockdown_by : "";
  j["lockdown_why"] = m.known ? k.lockdown_why : "";
  j["sig_enforce"] = m.known && m.module_sig ? J(k.sig_enforce) : J(nullptr);  // null: absent or unknown
  j["sig_enforce_by"] = k.sig_enforce_by;
  j["sig_enforce_why"] = k.sig_enforce_why;
  j["trusted_keys"] = m.keys_known ? J(m.keys) : J(nullptr);
  auto& mod = j["module"];
  mod["source"] = m.module_source;
  mod["installed"] = !m.module_absent;
  mod["file"] = m.module.file;
  mod["compression"] = m.module.compression;
  mod["signed"] = m.module_read ? m.module.state : "";
  mod["signer"] = m.module.signature.signer;
  mod["key_id"] = m.module.signature.key_id_hex;
  mod["hash"] = m.module.signature.hash;
  mod["error"] = m.module_read ? m.module.error : m.module_error;
  auto& load = j["load"];
  load["decided"] = m.decided;
  load["undecided_why"] = m.undecided_why;
  load["loaded"] = m.decided && m.load.loaded;
  load["tainted"] = m.decided && m.load.tainted;
  load["errno"] = m.decided && m.load.err ? ErrnoName(m.load.err) : "";
  load["refused_by"] = m.load.refused_by;
  load["why"] = m.load.why;
  load["rule"] = m.load.rule;
  load["dmesg"] = m.load.dmesg;
  load["loader_error"] = m.load.loader_error;
  return j;
}

}  // namespace resmem::engine
