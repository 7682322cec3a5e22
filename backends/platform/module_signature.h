// The signature appended to a kernel module, read from the module's bytes (the host Platform),
// and the text the Platforms render it as for the pseudo-source "module-signature:NAME" (the
// host from the installed file, the simulator from its machine model), read back by the doctor.
//
// The layout (include/linux/module_signature.h, scripts/sign-file.c): the file ends with the 28
// bytes MODULE_SIG_STRING "~Module signature appended~\n"; before them a 12-byte
// struct module_signature { u8 algo, hash, id_type, signer_len, key_id_len, __pad[3]; __be32
// sig_len; }; before that sig_len bytes of signature. Modern kernels write only id_type 2
// (PKEY_ID_PKCS7), a DER PKCS#7 SignedData (RFC 2315) whose SignerInfo names the signing key by
// issuerAndSerialNumber (sign-file's default: the certificate's issuer Name and serial) or by a
// [0] subjectKeyIdentifier (sign-file -k); the other fields are zero. The kernel's own checks
// of the struct (kernel/module_signature.c mod_check_sig) are applied here with its words.
#ifndef RESMEM_BACKENDS_PLATFORM_MODULE_SIGNATURE_H_
#define RESMEM_BACKENDS_PLATFORM_MODULE_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

constexpr std::string_view kModuleSigMagic = "~Module signature appended~\n";
constexpr size_t kModuleSignatureStructBytes = 12;

// What the appended signature says about its signer.
struct ModuleSignature {
  bool is_signed = false;       // the file ends with the magic
  uint32_t signature_bytes = 0; // sig_len: the PKCS#7 message's size
  std::string signer;           // the issuer's CN (OID 2.5.4.3) of the first SignerInfo; ""
                                // when it names the key by subjectKeyIdentifier
  std::string serial_hex;       // the certificate's serial (issuerAndSerialNumber), lower hex
  std::string key_id_hex;       // the subjectKeyIdentifier, when the SignerInfo uses one
  std::string hash;             // the SignerInfo's digest: "sha256", "sha512", ... (the OID
                                // when the name is not known)
  int signer_count = 0;         // SignerInfos in the message (sign-file writes one)
};

// The signature of a module's bytes (decompressed). A file without the magic is unsigned (the
// kernel's module_sig_check: -ENODATA, "unsigned module"). A magic with a trailer that does not
// fit, an id_type other than PKCS#7, non-zero fields, or a PKCS#7 message that cannot be walked
// is an error naming the offset and what was found: the kernel refuses such a module even when
// signatures are not enforced (-EBADMSG; -ENOPKG for another id_type).
Result<ModuleSignature> ParseModuleSignature(std::string_view module);

// The pseudo-source's text, one "key: value" a line:
//   file: /lib/modules/6.1.0-56-amd64/updates/dkms/resmem.ko.xz   always, the file read
//   compression: none | xz | zstd | gzip                          always
//   signed: yes | no | malformed                                  always
//   error: WHY                                                    with malformed
//   signer: DKMS module signing key                               signed, named by issuer
//   serial: 7d61f9f4...                                           signed, named by issuer
//   key_id: 4a3b...                                               signed, named by key id
//   hash: sha256                                                  signed
//   also: PATH                                                    each other candidate file
// Keys appear in this order; a line of another key, or one without ": ", is an error.
struct ModuleSignatureFacts {
  std::string file;
  std::string compression = "none";
  std::string state = "no";     // "yes", "no", "malformed"
  std::string error;            // why malformed
  ModuleSignature signature;    // for "yes"
  std::vector<std::string> also;  // other files that could be the module (depmod would pick
                                   // `file`: updates/ first)
};
std::string RenderModuleSignatureFacts(const ModuleSignatureFacts& facts);
Result<ModuleSignatureFacts> ParseModuleSignatureFacts(const std::string& text);

// The name of a digest algorithm OID as the kernel calls it (crypto/asymmetric_keys/
// pkcs7_parser.c pkcs7_sig_note_digest_algo): "sha256", ...; "" for one it does not know.
std::string DigestName(const std::string& oid);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_MODULE_SIGNATURE_H_
