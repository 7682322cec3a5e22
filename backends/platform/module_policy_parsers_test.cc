// The module policy's files as the kernel prints them, and what each parser refuses.
#include <gtest/gtest.h>

#include "backends/platform/module_policy_parsers.h"

namespace resmem {
namespace {

TEST(ModulePolicyParsers, ModulesDisabled) {
  EXPECT_FALSE(*ParseModulesDisabled("0\n"));
  EXPECT_TRUE(*ParseModulesDisabled("1\n"));
  for (const char* bad : {"", "2\n", "yes\n", "0 1\n"}) {
    auto r = ParseModulesDisabled(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("not 0 or 1"), std::string::npos);
  }
}

TEST(ModulePolicyParsers, LockdownTakesTheBracketedWord) {
  EXPECT_EQ(*ParseLockdown("[none] integrity confidentiality\n"), LockdownLevel::kNone);
  EXPECT_EQ(*ParseLockdown("none [integrity] confidentiality\n"), LockdownLevel::kIntegrity);
  EXPECT_EQ(*ParseLockdown("none integrity [confidentiality]\n"), LockdownLevel::kConfidentiality);
  struct Bad {
    const char* text;
    const char* says;
  } bad[] = {
      {"none integrity confidentiality\n", "exactly one level must be bracketed"},
      {"[none] [integrity] confidentiality\n", "exactly one level must be bracketed"},
      {"", "exactly one level must be bracketed"},
      {"none [strict] confidentiality\n", "'[strict]' is not one of"},
      {"[]\n", "'[]' is not one of"},
  };
  for (const auto& b : bad) {
    auto r = ParseLockdown(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status().message();
  }
  EXPECT_STREQ(LockdownWord(LockdownLevel::kConfidentiality), "confidentiality");
}

TEST(ModulePolicyParsers, SigEnforce) {
  EXPECT_TRUE(*ParseSigEnforce("Y\n"));
  EXPECT_FALSE(*ParseSigEnforce("N\n"));
  EXPECT_FALSE(ParseSigEnforce("1\n").ok());
  EXPECT_FALSE(ParseSigEnforce("y\n").ok());
}

TEST(ModulePolicyParsers, SecureBootVariable) {
  EXPECT_TRUE(*ParseSecureBootVariable(std::string("\x06\x00\x00\x00\x01", 5)));
  EXPECT_FALSE(*ParseSecureBootVariable(std::string("\x06\x00\x00\x00\x00", 5)));
  auto short_var = ParseSecureBootVariable(std::string("\x06\x00\x00\x00", 4));
  ASSERT_FALSE(short_var.ok());
  EXPECT_NE(short_var.status().message().find("has 4 bytes"), std::string::npos);
  auto value = ParseSecureBootVariable(std::string("\x06\x00\x00\x00\x02", 5));
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("value is 2"), std::string::npos);
  EXPECT_STREQ(SecureBootStateText(SecureBootState::kEfiNoVariable), "EFI boot, no SecureBoot variable");
}

// /proc/keys of a Debian 6.1 machine with a MOK enrolled (security/keys/proc.c's columns).
constexpr const char* kKeys =
    "0c2e8d8c I------     1 perm 1f030000     0     0 asymmetri Debian Secure Boot CA: "
    "6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: X509.rsa a7d9cc0f []\n"
    "1a2b3c4d I------     1 perm 1f0b0000     0     0 keyring   .builtin_trusted_keys: 1\n"
    "2b3c4d5e I------     1 perm 1f030000     0     0 asymmetri Microsoft Corporation UEFI CA 2011: "
    "13adbf4309bd82709c8cd54f316ed522988a1bd4: X509.rsa 8a1bd4 []\n"
    "3c4d5e6f I------     1 perm 1f030000     0     0 asymmetri Example Org: DKMS module signing key: "
    "2df5429910e9f7ca5ca20d2111642b45ab99dff4: X509.rsa 99dff4 []\n"
    "4d5e6f70 I--Q---     2 perm 3f010000     0     0 user      invocation_id: 16\n";

TEST(ModulePolicyParsers, KeySubjectsOfAsymmetricKeysOnly) {
  auto r = ParseKeySubjects(kKeys);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], "Debian Secure Boot CA");
  EXPECT_EQ((*r)[1], "Microsoft Corporation UEFI CA 2011");
  EXPECT_EQ((*r)[2], "Example Org: DKMS module signing key");  // "O: CN"
  EXPECT_TRUE(KeySubjectMatches((*r)[2], "DKMS module signing key"));
  EXPECT_TRUE(KeySubjectMatches((*r)[0], "Debian Secure Boot CA"));
  EXPECT_FALSE(KeySubjectMatches((*r)[0], "Debian"));
  EXPECT_FALSE(KeySubjectMatches((*r)[0], ""));
  EXPECT_TRUE(ParseKeySubjects("").ok());
  auto bad = ParseKeySubjects("0c2e8d8c I------ 1 perm\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/proc/keys line 1"), std::string::npos);
  EXPECT_FALSE(ParseKeySubjects("zzzzzzzz I------     1 perm 1f030000     0     0 asymmetri x\n").ok());
}

}  // namespace
}  // namespace resmem
