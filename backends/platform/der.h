// A small, bounds-checked reader of DER (ITU-T X.690 distinguished encoding), enough to walk the
// PKCS#7 SignedData of a module signature (backends/platform/module_signature.h) without OpenSSL:
// the resmem binary is linked statically. Every read checks the length against what remains of
// its enclosing element and fails with a message naming the offset and what was expected, never
// reads outside the input. BER's indefinite length (0x80), lengths of more than 4 bytes and
// high tag numbers (0x1f) are refused: DER (and the kernel's ASN.1 decoder for PKCS#7,
// lib/asn1_decoder.c) meets none of them in a module signature.
#ifndef RESMEM_BACKENDS_PLATFORM_DER_H_
#define RESMEM_BACKENDS_PLATFORM_DER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "backends/api/status.h"

namespace resmem::der {

// Identifier octets of the types PKCS#7 uses (X.690 8.1.2: class, constructed bit, number).
constexpr uint8_t kInteger = 0x02;
constexpr uint8_t kOctetString = 0x04;
constexpr uint8_t kNull = 0x05;
constexpr uint8_t kOid = 0x06;
constexpr uint8_t kUtf8String = 0x0c;
constexpr uint8_t kPrintableString = 0x13;
constexpr uint8_t kT61String = 0x14;
constexpr uint8_t kIa5String = 0x16;
constexpr uint8_t kVisibleString = 0x1a;
constexpr uint8_t kBmpString = 0x1e;
constexpr uint8_t kSequence = 0x30;
constexpr uint8_t kSet = 0x31;
constexpr uint8_t kContext0 = 0xa0;          // [0] constructed (EXPLICIT, or IMPLICIT SET OF)
constexpr uint8_t kContext1 = 0xa1;          // [1] constructed
constexpr uint8_t kContext0Primitive = 0x80; // [0] IMPLICIT of a primitive type

// One element: its identifier octet, where it starts in the whole input, and its contents.
struct Element {
  uint8_t tag = 0;
  size_t offset = 0;          // of the identifier octet, from the start of the whole input
  std::string_view content;   // the contents octets (a view into the input)
  size_t content_offset = 0;  // of the first contents octet
};

// Reads the elements of one level in order: the whole input, or the contents of a constructed
// element (Reader::Inside). `base` is where `data` starts in the whole input (for messages).
// The reader holds a view: `data` must outlive it, so a temporary string is refused at compile time.
class Reader {
 public:
  explicit Reader(std::string_view data, size_t base = 0) : data_(data), base_(base) {}
  explicit Reader(std::string&& data, size_t base = 0) = delete;
  static Reader Inside(const Element& e) { return Reader(e.content, e.content_offset); }

  bool done() const { return pos_ >= data_.size(); }
  // The next element, or an error naming its offset (truncated header, length past the end,
  // indefinite or over-long length, high tag number).
  Result<Element> Next();
  // The next element, which must carry `tag`; `what` names it in the error ("SignedData").
  Result<Element> Expect(uint8_t tag, const char* what);
  // The next element's identifier without consuming it; 0 at the end.
  uint8_t PeekTag() const { return done() ? 0 : static_cast<uint8_t>(data_[pos_]); }

 private:
  std::string_view data_;
  size_t base_ = 0;
  size_t pos_ = 0;
};

// An OBJECT IDENTIFIER's contents in dotted form ("2.5.4.3"); an error for an empty encoding,
// a sub-identifier that does not end or does not fit 64 bits.
Result<std::string> OidText(std::string_view content);

// A directory string's contents as text: UTF8String, PrintableString, IA5String, VisibleString,
// T61String (bytes as they are) and BMPString (UCS-2 big-endian, written as UTF-8). An error for
// any other type, naming it.
Result<std::string> DirectoryString(const Element& e);

// Bytes as lower-case hex, no separators ("7d61f9f4...").
std::string Hex(std::string_view bytes);

}  // namespace resmem::der

#endif  // RESMEM_BACKENDS_PLATFORM_DER_H_
