// The appended module signature and its pseudo-source text (module_signature.h).
#include "backends/platform/module_signature.h"

#include <sstream>

#include "backends/platform/der.h"

namespace resmem {
namespace {

constexpr const char* kSignedDataOid = "1.2.840.113549.1.7.2";  // RFC 2315 signedData
constexpr const char* kCommonNameOid = "2.5.4.3";
constexpr const char* kOrganizationOid = "2.5.4.10";
constexpr const char* kEmailOid = "1.2.840.113549.1.9.1";

Status Bad(const std::string& what) {
  return Status::InvalidArgument("module signature: " + what);
}

// The text of one attribute of a Name (SEQUENCE OF SET OF { type OID, value }) by OID, "" when
// the Name has none.
Result<std::string> NameAttribute(const der::Element& name, const std::string& oid) {
  der::Reader rdns = der::Reader::Inside(name);
  while (!rdns.done()) {
    RESMEM_ASSIGN_OR_RETURN(der::Element rdn, rdns.Expect(der::kSet, "a RelativeDistinguishedName"));
    der::Reader atvs = der::Reader::Inside(rdn);
    while (!atvs.done()) {
      RESMEM_ASSIGN_OR_RETURN(der::Element atv, atvs.Expect(der::kSequence, "an AttributeTypeAndValue"));
      der::Reader parts = der::Reader::Inside(atv);
      RESMEM_ASSIGN_OR_RETURN(der::Element type, parts.Expect(der::kOid, "an attribute type"));
      RESMEM_ASSIGN_OR_RETURN(std::string type_oid, der::OidText(type.content));
      RESMEM_ASSIGN_OR_RETURN(der::Element value, parts.Next());
      if (type_oid == oid) return der::DirectoryString(value);
    }
  }
  return std::string();
}

// The signer's name as the kernel would describe its key: the CN, else the O, else the e-mail
// address (crypto/asymmetric_keys/x509_cert_parser.c x509_fabricate_name picks among these).
Result<std::string> SignerName(const der::Element& issuer) {
  for (const char* oid : {kCommonNameOid, kOrganizationOid, kEmailOid}) {
    RESMEM_ASSIGN_OR_RETURN(std::string v, NameAttribute(issuer, oid));
    if (!v.empty()) return v;
  }
  return std::string();
}

// SignerInfo ::= SEQUENCE { version, sid (issuerAndSerialNumber | [0] subjectKeyIdentifier),
// digestAlgorithm, [0] authenticatedAttributes OPTIONAL, digestEncryptionAlgorithm,
// encryptedDigest OCTET STRING, ... } (RFC 2315 9.2; RFC 5652 5.3 for the [0] key id).
Status ReadSignerInfo(const der::Element& info, ModuleSignature* s) {
  der::Reader r = der::Reader::Inside(info);
  RESMEM_RETURN_IF_ERROR(r.Expect(der::kInteger, "the SignerInfo's version").status());
  if (r.PeekTag() == der::kSequence) {
    RESMEM_ASSIGN_OR_RETURN(der::Element iasn, r.Next());
    der::Reader ir = der::Reader::Inside(iasn);
    RESMEM_ASSIGN_OR_RETURN(der::Element issuer, ir.Expect(der::kSequence, "the issuer's Name"));
    RESMEM_ASSIGN_OR_RETURN(der::Element serial, ir.Expect(der::kInteger, "the serial number"));
    RESMEM_ASSIGN_OR_RETURN(s->signer, SignerName(issuer));
    s->serial_hex = der::Hex(serial.content);
  } else if (r.PeekTag() == der::kContext0Primitive) {
    RESMEM_ASSIGN_OR_RETURN(der::Element ski, r.Next());
    s->key_id_hex = der::Hex(ski.content);
  } else {
    RESMEM_ASSIGN_OR_RETURN(der::Element e, r.Next());
    return Status::InvalidArgument("DER at byte " + std::to_string(e.offset) +
                                   ": the SignerInfo names its key neither by issuer and serial "
                                   "nor by a [0] subjectKeyIdentifier");
  }
  RESMEM_ASSIGN_OR_RETURN(der::Element digest, r.Expect(der::kSequence, "the digestAlgorithm"));
  der::Reader dr = der::Reader::Inside(digest);
  RESMEM_ASSIGN_OR_RETURN(der::Element digest_oid, dr.Expect(der::kOid, "the digest's OID"));
  RESMEM_ASSIGN_OR_RETURN(std::string oid, der::OidText(digest_oid.content));
  s->hash = DigestName(oid).empty() ? oid : DigestName(oid);
  if (r.PeekTag() == der::kContext0) RESMEM_RETURN_IF_ERROR(r.Next().status());
  RESMEM_RETURN_IF_ERROR(r.Expect(der::kSequence, "the digestEncryptionAlgorithm").status());
  RESMEM_RETURN_IF_ERROR(r.Expect(der::kOctetString, "the encryptedDigest").status());
  return Status::Ok();
}

// ContentInfo { signedData OID, [0] EXPLICIT SignedData { version, digestAlgorithms SET,
// contentInfo, [0] certificates OPTIONAL, [1] crls OPTIONAL, signerInfos SET } } (RFC 2315 7, 9.1).
Status ReadPkcs7(std::string_view message, size_t base, ModuleSignature* s) {
  der::Reader top(message, base);
  RESMEM_ASSIGN_OR_RETURN(der::Element content_info, top.Expect(der::kSequence, "the PKCS#7 ContentInfo"));
  if (!top.done())
    return Status::InvalidArgument("DER at byte " + std::to_string(content_info.offset) +
                                   ": bytes follow the PKCS#7 message inside sig_len");
  der::Reader ci = der::Reader::Inside(content_info);
  RESMEM_ASSIGN_OR_RETURN(der::Element type, ci.Expect(der::kOid, "the contentType"));
  RESMEM_ASSIGN_OR_RETURN(std::string type_oid, der::OidText(type.content));
  if (type_oid != kSignedDataOid)
    return Status::InvalidArgument("DER at byte " + std::to_string(type.offset) + ": contentType " +
                                   type_oid + ", not signedData (" + kSignedDataOid + ")");
  RESMEM_ASSIGN_OR_RETURN(der::Element explicit0, ci.Expect(der::kContext0, "the [0] content"));
  der::Reader ex = der::Reader::Inside(explicit0);
  RESMEM_ASSIGN_OR_RETURN(der::Element signed_data, ex.Expect(der::kSequence, "the SignedData"));
  der::Reader sd = der::Reader::Inside(signed_data);
  RESMEM_RETURN_IF_ERROR(sd.Expect(der::kInteger, "the SignedData's version").status());
  RESMEM_RETURN_IF_ERROR(sd.Expect(der::kSet, "the digestAlgorithms").status());
  RESMEM_RETURN_IF_ERROR(sd.Expect(der::kSequence, "the contentInfo").status());
  if (sd.PeekTag() == der::kContext0) RESMEM_RETURN_IF_ERROR(sd.Next().status());  // certificates
  if (sd.PeekTag() == der::kContext1) RESMEM_RETURN_IF_ERROR(sd.Next().status());  // crls
  RESMEM_ASSIGN_OR_RETURN(der::Element infos, sd.Expect(der::kSet, "the signerInfos"));
  der::Reader si = der::Reader::Inside(infos);
  while (!si.done()) {
    RESMEM_ASSIGN_OR_RETURN(der::Element info, si.Expect(der::kSequence, "a SignerInfo"));
    if (s->signer_count++ == 0) RESMEM_RETURN_IF_ERROR(ReadSignerInfo(info, s));
  }
  if (s->signer_count == 0)
    return Status::InvalidArgument("DER at byte " + std::to_string(infos.offset) +
                                   ": the PKCS#7 message has no SignerInfo");
  return Status::Ok();
}

// A value as one line of the text: control characters (a CN could hold a newline) become '?'.
std::string OneLine(const std::string& v) {
  std::string out = v;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

}  // namespace

std::string DigestName(const std::string& oid) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"1.3.14.3.2.26", "sha1"},
      {"2.16.840.1.101.3.4.2.1", "sha256"},
      {"2.16.840.1.101.3.4.2.2", "sha384"},
      {"2.16.840.1.101.3.4.2.3", "sha512"},
      {"2.16.840.1.101.3.4.2.4", "sha224"},
      {"2.16.840.1.101.3.4.2.8", "sha3-256"},
      {"2.16.840.1.101.3.4.2.9", "sha3-384"},
      {"2.16.840.1.101.3.4.2.10", "sha3-512"},
  };
  for (const auto& [o, name] : kNames)
    if (oid == o) return name;
  return "";
}

Result<ModuleSignature> ParseModuleSignature(std::string_view module) {
  ModuleSignature s;
  const size_t marker = kModuleSigMagic.size();
  // kernel/module/signing.c module_sig_check: only a file longer than the marker that ends with
  // it is signed; the rest is "unsigned module".
  if (module.size() <= marker || module.substr(module.size() - marker) != kModuleSigMagic) return s;
  s.is_signed = true;
  const size_t len = module.size() - marker;
  if (len < kModuleSignatureStructBytes)
    return Bad("the magic is there but the 12-byte struct module_signature before it is cut off (" +
               std::to_string(len) + " bytes before the magic)");
  const auto* ms = reinterpret_cast<const uint8_t*>(module.data() + len - kModuleSignatureStructBytes);
  const uint32_t sig_len = (uint32_t{ms[8]} << 24) | (uint32_t{ms[9]} << 16) | (uint32_t{ms[10]} << 8) | ms[11];
  s.signature_bytes = sig_len;
  // kernel/module_signature.c mod_check_sig, in its order and words.
  if (sig_len >= len - kModuleSignatureStructBytes)
    return Bad("sig_len " + std::to_string(sig_len) + " does not fit in the " +
               std::to_string(len - kModuleSignatureStructBytes) +
               " bytes before the trailer: the kernel refuses it (mod_check_sig: -EBADMSG)");
  if (ms[2] != 2)
    return Bad("id_type " + std::to_string(ms[2]) + ", not PKCS#7 (2): \"not signed with expected "
               "PKCS#7 message\" (mod_check_sig: -ENOPKG)");
  if (ms[0] || ms[1] || ms[3] || ms[4] || ms[5] || ms[6] || ms[7])
    return Bad("\"PKCS#7 signature info has unexpected non-zero params\" (mod_check_sig: -EBADMSG)");
  const size_t start = len - kModuleSignatureStructBytes - sig_len;
  Status st = ReadPkcs7(module.substr(start, sig_len), start, &s);
  if (!st.ok()) return Bad(st.message() + " (the kernel's PKCS#7 parser refuses it: -EBADMSG)");
  return s;
}

std::string RenderModuleSignatureFacts(const ModuleSignatureFacts& f) {
  std::string o = "file: " + OneLine(f.file) + "\ncompression: " + OneLine(f.compression) +
                  "\nsigned: " + OneLine(f.state) + "\n";
  if (f.state == "malformed") o += "error: " + OneLine(f.error) + "\n";
  if (f.state == "yes") {
    const ModuleSignature& s = f.signature;
    if (!s.signer.empty() || !s.serial_hex.empty()) o += "signer: " + OneLine(s.signer) + "\n";
    if (!s.serial_hex.empty()) o += "serial: " + s.serial_hex + "\n";
    if (!s.key_id_hex.empty()) o += "key_id: " + s.key_id_hex + "\n";
    o += "hash: " + OneLine(s.hash) + "\n";
  }
  for (const auto& a : f.also) o += "also: " + OneLine(a) + "\n";
  return o;
}

Result<ModuleSignatureFacts> ParseModuleSignatureFacts(const std::string& text) {
  static const char* const kOrder[] = {"file", "compression", "signed", "error", "signer",
                                       "serial", "key_id", "hash", "also"};
  ModuleSignatureFacts f;
  std::istringstream in(text);
  std::string line;
  size_t at = 0, n = 0;
  bool seen_file = false, seen_signed = false;
  while (std::getline(in, line)) {
    ++n;
    const size_t colon = line.find(": ");
    const std::string key = colon == std::string::npos ? "" : line.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : line.substr(colon + 2);
    size_t k = at;
    while (k < std::size(kOrder) && key != kOrder[k]) ++k;
    if (k == std::size(kOrder))
      return Status::InvalidArgument("module signature text line " + std::to_string(n) + ": '" + line +
                                     "' is not 'KEY: VALUE' with KEY one of file, compression, signed, "
                                     "error, signer, serial, key_id, hash, also, in that order");
    at = key == "also" ? k : k + 1;
    seen_file = seen_file || key == "file";
    seen_signed = seen_signed || key == "signed";
    if (key == "file") f.file = value;
    else if (key == "compression") f.compression = value;
    else if (key == "signed") f.state = value;
    else if (key == "error") f.error = value;
    else if (key == "signer") f.signature.signer = value;
    else if (key == "serial") f.signature.serial_hex = value;
    else if (key == "key_id") f.signature.key_id_hex = value;
    else if (key == "hash") f.signature.hash = value;
    else f.also.push_back(value);
  }
  if (!seen_file || !seen_signed)
    return Status::InvalidArgument("module signature text lacks the 'file:' or 'signed:' line");
  if (f.state != "yes" && f.state != "no" && f.state != "malformed")
    return Status::InvalidArgument("module signature text: signed is '" + f.state +
                                   "', not yes, no or malformed");
  f.signature.is_signed = f.state != "no";
  f.signature.signer_count = f.state == "yes" ? 1 : 0;
  return f;
}

}  // namespace resmem
