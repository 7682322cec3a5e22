// The kernel's module policy rules (module_policy.h): lockdown from the command line and from
// Secure Boot, sig_enforce, and the load decision for resmem.ko and its hardware parameters.
#include "mock/machine/module_policy.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "backends/platform/module_policy_parsers.h"

namespace resmem::sim {
namespace {

ModulePolicySpec Debian(bool secure_boot, std::vector<std::string> keys = {"Debian Secure Boot CA"}) {
  ModulePolicySpec p;
  p.described = true;
  p.efi = true;
  p.secure_boot = secure_boot;
  p.trusted_keys = std::move(keys);
  return p;
}

ModuleFileSpec Ko(const std::string& word) {
  ModuleFileSpec f;
  EXPECT_TRUE(ParseModuleFileWord(word, &f)) << word;
  return f;
}

TEST(ModulePolicy, SecureBootLocksDownAndEnforcesSignaturesOnDebian) {
  const ModuleKernel k = ReadModulePolicy("quiet memmap=64M$0x40000000", Debian(true));
  EXPECT_EQ(k.lockdown, LockdownLevel::kIntegrity);
  EXPECT_EQ(k.lockdown_by, "Secure Boot");
  EXPECT_NE(k.lockdown_why.find("CONFIG_LOCK_DOWN_IN_EFI_SECURE_BOOT"), std::string::npos);
  EXPECT_TRUE(k.sig_enforce);
  EXPECT_EQ(k.sig_enforce_by, "Secure Boot");
  EXPECT_NE(k.sig_enforce_why.find("ima_efi.c"), std::string::npos);
  EXPECT_EQ(k.dmesg, (std::vector<std::string>{
                         "secureboot: Secure boot enabled",
                         "Kernel is locked down from EFI Secure Boot mode; see man kernel_lockdown.7"}));
  // dkms's key, never enrolled: "Key was rejected by service".
  const ModuleLoad l = DecideModuleLoad(k, Ko("signed:DKMS module signing key"), {});
  EXPECT_FALSE(l.loaded);
  EXPECT_EQ(l.err, EKEYREJECTED);
  EXPECT_EQ(l.refused_by, "sig_enforce");
  EXPECT_EQ(l.dmesg, std::vector<std::string>{"Loading of module with unavailable key is rejected"});
  EXPECT_EQ(l.loader_error, "insmod: ERROR: could not insert module resmem.ko: Key was rejected by service");
  EXPECT_NE(l.why.find("signed by 'DKMS module signing key', a key the kernel does not trust, and "
                       "signatures are enforced (sig_enforce=Y, set by Secure Boot: IMA's arch policy"),
            std::string::npos) << l.why;
  EXPECT_EQ(l.rule, "kernel/module/signing.c module_sig_check: -EKEYREJECTED");
  // Enrolled (a MOK: the machine keyring on 6.1): it loads, untainted.
  const ModuleKernel enrolled =
      ReadModulePolicy("quiet", Debian(true, {"Debian Secure Boot CA", "DKMS module signing key"}));
  const ModuleLoad ok = DecideModuleLoad(enrolled, Ko("signed:DKMS module signing key"), {});
  EXPECT_TRUE(ok.loaded);
  EXPECT_FALSE(ok.tainted);
  EXPECT_TRUE(ok.dmesg.empty());
  // Unsigned: "Loading of unsigned module is rejected".
  const ModuleLoad u = DecideModuleLoad(k, Ko("unsigned"), {});
  EXPECT_EQ(u.err, EKEYREJECTED);
  EXPECT_EQ(u.dmesg, std::vector<std::string>{"Loading of unsigned module is rejected"});
}

TEST(ModulePolicy, LockdownRefusesTheHardwareParametersOfATrustedModule) {
  const ModuleKernel k =
      ReadModulePolicy("quiet", Debian(true, {"Debian Secure Boot CA", "DKMS module signing key"}));
  const ModuleLoad l =
      DecideModuleLoad(k, Ko("signed:DKMS module signing key"), {"ranges=64M$0x40000000"});
  EXPECT_FALSE(l.loaded);
  EXPECT_EQ(l.err, EPERM);
  EXPECT_EQ(l.refused_by, "parameters");
  EXPECT_EQ(l.dmesg, (std::vector<std::string>{
                         "Lockdown: insmod: unsafe module parameters is restricted; see man kernel_lockdown.7",
                         "resmem: `64M$0x40000000' invalid for parameter `ranges'"}));
  EXPECT_EQ(l.loader_error, "insmod: ERROR: could not insert module resmem.ko: Operation not permitted");
  EXPECT_NE(l.why.find("serves what memmap= reserved"), std::string::npos);
  // phys= and size= too, each with its own pair of lines.
  const ModuleLoad two = DecideModuleLoad(k, Ko("signed:DKMS module signing key"),
                                          {"phys=0x40000000", "size=67108864"});
  ASSERT_EQ(two.dmesg.size(), 4u);
  EXPECT_EQ(two.dmesg[3], "resmem: `67108864' invalid for parameter `size'");
  // Without lockdown the same parameters are taken.
  const ModuleKernel off = ReadModulePolicy("quiet", Debian(false, {"DKMS module signing key"}));
  EXPECT_TRUE(DecideModuleLoad(off, Ko("signed:DKMS module signing key"), {"ranges=64M$0x40000000"}).loaded);
}

TEST(ModulePolicy, LockdownFromTheCommandLineRefusesUnsignedModulesWithEperm) {
  ModulePolicySpec bios;
  bios.described = true;  // legacy boot: no EFI, no Secure Boot
  const ModuleKernel k = ReadModulePolicy("lockdown=integrity", bios);
  EXPECT_EQ(k.lockdown, LockdownLevel::kIntegrity);
  EXPECT_FALSE(k.sig_enforce);
  EXPECT_EQ(k.dmesg, std::vector<std::string>{"Kernel is locked down from command line; see man kernel_lockdown.7"});
  const ModuleLoad l = DecideModuleLoad(k, Ko("unsigned"), {});
  EXPECT_EQ(l.err, EPERM);
  EXPECT_EQ(l.refused_by, "lockdown");
  EXPECT_NE(l.why.find("locked down (integrity, by lockdown=integrity on the command line: "
                       "security/lockdown/lockdown.c lockdown_param"), std::string::npos) << l.why;
  EXPECT_EQ(l.dmesg, std::vector<std::string>{
                         "Lockdown: insmod: unsigned module loading is restricted; see man kernel_lockdown.7"});
  // The same line for a key the kernel does not trust (module_sig_check gives the lockdown
  // check no reason).
  EXPECT_EQ(DecideModuleLoad(k, Ko("signed:Someone"), {}).dmesg, l.dmesg);
  // confidentiality first, then Secure Boot: one line, the higher level stays.
  const ModuleKernel c = ReadModulePolicy("lockdown=confidentiality", Debian(true));
  EXPECT_EQ(c.lockdown, LockdownLevel::kConfidentiality);
  EXPECT_EQ(c.dmesg, (std::vector<std::string>{
                         "Kernel is locked down from command line; see man kernel_lockdown.7",
                         "secureboot: Secure boot enabled"}));
  // Anything but integrity and confidentiality is -EINVAL: a malformed early option.
  for (const char* line : {"lockdown=none", "lockdown", "lockdown=Integrity"}) {
    const ModuleKernel m = ReadModulePolicy(line, bios);
    EXPECT_EQ(m.lockdown, LockdownLevel::kNone) << line;
    EXPECT_EQ(m.dmesg, std::vector<std::string>{"Malformed early option 'lockdown'"}) << line;
  }
  EXPECT_EQ(ReadModulePolicy("quiet -- lockdown=integrity", bios).lockdown, LockdownLevel::kNone);
}

TEST(ModulePolicy, SigEnforceFromTheCommandLine) {
  ModulePolicySpec bios;
  bios.described = true;
  for (const char* line : {"module.sig_enforce=1", "module.sig-enforce=y", "module.sig_enforce",
                           "module.sig_enforce=on"}) {
    const ModuleKernel k = ReadModulePolicy(line, bios);
    EXPECT_TRUE(k.sig_enforce) << line;
    EXPECT_NE(k.sig_enforce_by.find("on the command line"), std::string::npos);
    EXPECT_EQ(DecideModuleLoad(k, Ko("unsigned"), {}).err, EKEYREJECTED) << line;
  }
  EXPECT_FALSE(ReadModulePolicy("module.sig_enforce=0", bios).sig_enforce);
  EXPECT_FALSE(ReadModulePolicy("-- module.sig_enforce=1", bios).sig_enforce);
  const ModuleKernel bad = ReadModulePolicy("module.sig_enforce=maybe", bios);
  EXPECT_FALSE(bad.sig_enforce);
  EXPECT_EQ(bad.dmesg, std::vector<std::string>{
                           "Booting kernel: `maybe' invalid for parameter `module.sig_enforce'"});
  // Not enforced, not locked down: the module loads and taints the kernel (FACTS.md: the QEMU
  // lane's unsigned module prints the line).
  const ModuleLoad l = DecideModuleLoad(ReadModulePolicy("quiet", bios), Ko("unsigned"), {});
  EXPECT_TRUE(l.loaded);
  EXPECT_TRUE(l.tainted);
  EXPECT_EQ(l.dmesg, std::vector<std::string>{
                         "resmem: module verification failed: signature and/or required key missing - "
                         "tainting kernel"});
}

TEST(ModulePolicy, KernelsWithoutSignaturesOrLockdown) {
  ModulePolicySpec no_sig = Debian(true);
  no_sig.module_sig = false;  // no module_sig_check at all, lockdown or not
  const ModuleKernel k = ReadModulePolicy("module.sig_enforce=1", no_sig);
  EXPECT_FALSE(k.sig_enforce);
  EXPECT_EQ(k.lockdown, LockdownLevel::kIntegrity);
  const ModuleLoad l = DecideModuleLoad(k, Ko("unsigned"), {});
  EXPECT_TRUE(l.loaded);
  EXPECT_FALSE(l.tainted);
  ModulePolicySpec no_lsm = Debian(true);
  no_lsm.lockdown_lsm = false;
  const ModuleKernel n = ReadModulePolicy("lockdown=integrity", no_lsm);
  EXPECT_EQ(n.lockdown, LockdownLevel::kNone);
  EXPECT_TRUE(n.sig_enforce);  // IMA's arch policy does not need the lockdown LSM
  EXPECT_TRUE(DecideModuleLoad(n, Ko("signed:Debian Secure Boot CA"), {"ranges=1G$4G"}).loaded);
}

TEST(ModulePolicy, ModulesDisabledAbsentAndMalformed) {
  ModulePolicySpec p = Debian(false);
  p.modules_disabled = true;
  const ModuleLoad d = DecideModuleLoad(ReadModulePolicy("", p), Ko("signed:Debian Secure Boot CA"), {});
  EXPECT_EQ(d.err, EPERM);
  EXPECT_EQ(d.refused_by, "modules_disabled");
  EXPECT_TRUE(d.dmesg.empty());  // may_init_module prints nothing
  EXPECT_NE(d.why.find("until the next boot"), std::string::npos);
  const ModuleKernel k = ReadModulePolicy("", Debian(false));
  const ModuleLoad a = DecideModuleLoad(k, Ko("absent"), {});
  EXPECT_EQ(a.err, ENOENT);
  EXPECT_EQ(a.loader_error, "modprobe: FATAL: Module resmem not found");
  ModuleFileSpec bad;
  bad.state = ModuleFileSpec::State::kMalformed;
  bad.error = "sig_len 9 does not fit (mod_check_sig: -EBADMSG)";
  const ModuleLoad m = DecideModuleLoad(k, bad, {});  // refused without any enforcement
  EXPECT_EQ(m.err, EBADMSG);
  EXPECT_EQ(m.refused_by, "signature");
  bad.error = "id_type 1, not PKCS#7 (2) (mod_check_sig: -ENOPKG)";
  EXPECT_TRUE(DecideModuleLoad(k, bad, {}).loaded);  // "unsupported crypto": only when enforced
  EXPECT_EQ(DecideModuleLoad(ReadModulePolicy("", Debian(true)), bad, {}).dmesg,
            std::vector<std::string>{"Loading of module with unsupported crypto is rejected"});
}

TEST(ModulePolicy, TheRenderedFilesReadBackThroughTheParsers) {
  for (auto level : {LockdownLevel::kNone, LockdownLevel::kIntegrity, LockdownLevel::kConfidentiality})
    EXPECT_EQ(*ParseLockdown(RenderLockdown(level)), level);
  EXPECT_EQ(RenderLockdown(LockdownLevel::kIntegrity), "none [integrity] confidentiality\n");
  EXPECT_TRUE(*ParseSecureBootVariable(RenderSecureBootVariable(true)));
  EXPECT_FALSE(*ParseSecureBootVariable(RenderSecureBootVariable(false)));
  const std::vector<std::string> keys = {"Debian Secure Boot CA", "Example Org: DKMS module signing key"};
  const std::string text = RenderKeys(keys);
  auto subjects = ParseKeySubjects(text);
  ASSERT_TRUE(subjects.ok()) << subjects.status().message() << "\n" << text;
  EXPECT_EQ(*subjects, keys);
  EXPECT_TRUE(SignerTrusted(keys, "DKMS module signing key"));
  EXPECT_FALSE(SignerTrusted(keys, "Example Org"));
  EXPECT_EQ(RenderKeys(keys), text);  // stable
  EXPECT_EQ(SecureBootOf(Debian(true)), SecureBootState::kEnabled);
  ModulePolicySpec bios;
  EXPECT_EQ(SecureBootOf(bios), SecureBootState::kNotEfi);
  ModuleFileSpec f;
  EXPECT_TRUE(ParseModuleFileWord("signed:DKMS module signing key", &f));
  EXPECT_EQ(ModuleFileWord(f), "signed:DKMS module signing key");
  for (const char* w : {"unsigned", "absent"}) {
    EXPECT_TRUE(ParseModuleFileWord(w, &f));
    EXPECT_EQ(ModuleFileWord(f), w);
  }
  for (const char* w : {"signed:", "signed", "", "malformed", "Unsigned"}) EXPECT_FALSE(ParseModuleFileWord(w, &f)) << w;
}

}  // namespace
}  // namespace resmem::sim
