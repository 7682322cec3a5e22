// The appended module signature on fixtures signed the way dkms and scripts/sign-file.c sign
// (testdata/make_module_signature_fixtures.sh), on unsigned files, truncated trailers and garbage
// DER: each gives the signer or a clear error, never a crash.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/module_signature.h"
#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in("backends/platform/testdata/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_TRUE(in.good() || in.eof()) << name;
  return s.str();
}

// The 12-byte struct module_signature then the magic, around `pkcs7` after `body`.
std::string Signed(const std::string& body, const std::string& pkcs7, uint8_t id_type = 2,
                   uint32_t sig_len_override = 0, uint8_t pad0 = 0) {
  const uint32_t n = sig_len_override ? sig_len_override : static_cast<uint32_t>(pkcs7.size());
  std::string ms = {0, 0, static_cast<char>(id_type), 0, 0, static_cast<char>(pad0), 0, 0,
                    static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                    static_cast<char>(n >> 8), static_cast<char>(n)};
  return body + pkcs7 + ms + std::string(kModuleSigMagic);
}

// The PKCS#7 message inside a signed fixture.
std::string Pkcs7Of(const std::string& module) {
  const size_t len = module.size() - kModuleSigMagic.size() - kModuleSignatureStructBytes;
  const auto* ms = reinterpret_cast<const uint8_t*>(module.data() + len);
  const uint32_t n = (uint32_t{ms[8]} << 24) | (uint32_t{ms[9]} << 16) | (uint32_t{ms[10]} << 8) | ms[11];
  return module.substr(len - n, n);
}

TEST(ModuleSignature, SignedByIssuerAndSerialAsDkmsSigns) {
  const std::string module = Fixture("signed_issuer.ko");
  ASSERT_GT(module.size(), 100u);
  auto s = ParseModuleSignature(module);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->is_signed);
  EXPECT_EQ(s->signer, "DKMS module signing key");
  EXPECT_EQ(s->serial_hex, TrimBlanks(Fixture("signer_serial.txt")));
  EXPECT_EQ(s->key_id_hex, "");
  EXPECT_EQ(s->hash, "sha256");
  EXPECT_EQ(s->signer_count, 1);
  EXPECT_EQ(s->signature_bytes, Pkcs7Of(module).size());
}

TEST(ModuleSignature, SignedBySubjectKeyIdentifier) {
  auto s = ParseModuleSignature(Fixture("signed_keyid.ko"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->is_signed);
  EXPECT_EQ(s->signer, "");
  EXPECT_EQ(s->key_id_hex, TrimBlanks(Fixture("signer_keyid.txt")));
  EXPECT_EQ(s->hash, "sha256");
}

TEST(ModuleSignature, UnsignedFilesAreNotErrors) {
  for (const std::string& bytes : {Fixture("module_body.ko"), std::string(), std::string("x"),
                                   std::string(kModuleSigMagic)}) {  // the magic alone: len == marker
    auto s = ParseModuleSignature(bytes);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_FALSE(s->is_signed);
  }
}

TEST(ModuleSignature, TruncatedAndInconsistentTrailersSayWhatIsWrong) {
  const std::string body = Fixture("module_body.ko");
  const std::string pkcs7 = Pkcs7Of(Fixture("signed_issuer.ko"));
  struct Case {
    std::string bytes;
    const char* says;
  } cases[] = {
      {"12345" + std::string(kModuleSigMagic), "struct module_signature before it is cut off"},
      {Signed("", pkcs7), "does not fit"},  // no module bytes before the signature: -EBADMSG
      {Signed(body, pkcs7, 2, 0x7fffffff), "sig_len 2147483647 does not fit"},
      {Signed(body, pkcs7, 1), "id_type 1, not PKCS#7"},
      {Signed(body, pkcs7, 2, 0, 1), "unexpected non-zero params"},
      {Signed(body, pkcs7 + "xx", 2), "bytes follow the PKCS#7 message"},
  };
  for (const auto& c : cases) {
    auto s = ParseModuleSignature(c.bytes);
    ASSERT_FALSE(s.ok()) << c.says;
    EXPECT_NE(s.status().message().find(c.says), std::string::npos) << s.status().message();
    EXPECT_EQ(s.status().message().rfind("module signature: ", 0), 0u) << s.status().message();
  }
}

TEST(ModuleSignature, EveryCutOfTheMessageIsAnErrorNeverACrash) {
  const std::string body = Fixture("module_body.ko");
  const std::string pkcs7 = Pkcs7Of(Fixture("signed_issuer.ko"));
  for (size_t cut = 1; cut < pkcs7.size(); ++cut) {
    auto s = ParseModuleSignature(Signed(body, pkcs7.substr(0, cut)));
    EXPECT_FALSE(s.ok()) << "a message cut to " << cut << " bytes parsed";
  }
}

TEST(ModuleSignature, GarbageDerGivesClearErrors) {
  const std::string body = Fixture("module_body.ko");
  const std::string pkcs7 = Pkcs7Of(Fixture("signed_issuer.ko"));
  // Every byte flipped in turn: parsed or refused, never read out of bounds.
  int refused = 0;
  for (size_t i = 0; i < pkcs7.size(); ++i) {
    std::string bad = pkcs7;
    bad[i] = static_cast<char>(bad[i] ^ 0xa5);
    auto s = ParseModuleSignature(Signed(body, bad));
    if (!s.ok()) {
      ++refused;
      EXPECT_NE(s.status().message().find("-EBADMSG"), std::string::npos) << s.status().message();
    }
  }
  EXPECT_GT(refused, 20);
  // A signedData of another content type, and a plain string.
  auto text = ParseModuleSignature(Signed(body, "this is no DER at all"));
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("DER at byte " + std::to_string(body.size())),
            std::string::npos) << text.status().message();
  std::string data_oid = pkcs7;
  const size_t oid = data_oid.find(std::string("\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02", 9));
  ASSERT_NE(oid, std::string::npos);
  data_oid[oid + 8] = 0x01;  // 1.2.840.113549.1.7.1: data
  auto d = ParseModuleSignature(Signed(body, data_oid));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not signedData"), std::string::npos) << d.status().message();
}

TEST(ModuleSignatureText, RendersAndReadsBack) {
  ModuleSignatureFacts f;
  f.file = "/lib/modules/6.1.0-56-amd64/updates/dkms/resmem.ko.xz";
  f.compression = "xz";
  f.state = "yes";
  f.signature = *ParseModuleSignature(Fixture("signed_issuer.ko"));
  f.also = {"/lib/modules/6.1.0-56-amd64/extra/resmem.ko"};
  const std::string text = RenderModuleSignatureFacts(f);
  EXPECT_EQ(text.substr(0, text.find("serial:")),
            "file: /lib/modules/6.1.0-56-amd64/updates/dkms/resmem.ko.xz\ncompression: xz\n"
            "signed: yes\nsigner: DKMS module signing key\n");
  EXPECT_NE(text.find("hash: sha256\nalso: /lib/modules/6.1.0-56-amd64/extra/resmem.ko\n"),
            std::string::npos) << text;
  auto back = ParseModuleSignatureFacts(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->file, f.file);
  EXPECT_EQ(back->signature.signer, "DKMS module signing key");
  EXPECT_EQ(back->signature.serial_hex, f.signature.serial_hex);
  EXPECT_EQ(back->also, f.also);
  EXPECT_TRUE(back->signature.is_signed);

  auto bad = ParseModuleSignatureFacts("file: x\nsigned: malformed\nerror: sig_len 9 does not fit\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->error, "sig_len 9 does not fit");
  // A CN with a newline cannot forge a line.
  f.signature.signer = "evil\nsigner: trusted";
  auto forged = ParseModuleSignatureFacts(RenderModuleSignatureFacts(f));
  ASSERT_TRUE(forged.ok());
  EXPECT_EQ(forged->signature.signer, "evil?signer: trusted");
  for (const char* wrong : {"signed: yes\n", "file: x\nsigned: maybe\n", "file: x\nsigned: no\nfile: y\n",
                            "file: x\nsigned: no\nowner: me\n", "file: x\nsigned no\n"}) {
    EXPECT_FALSE(ParseModuleSignatureFacts(wrong).ok()) << wrong;
  }
}

}  // namespace
}  // namespace resmem
