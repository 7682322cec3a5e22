// The DER reader (der.h).
#include "backends/platform/der.h"

#include <cstdio>

namespace resmem::der {
namespace {

std::string At(size_t offset) { return "DER at byte " + std::to_string(offset); }

std::string TagText(uint8_t tag) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", tag);
  return buf;
}

}  // namespace

Result<Element> Reader::Next() {
  const size_t start = pos_;
  const size_t remaining = data_.size() - pos_;
  if (remaining < 2)
    return Status::InvalidArgument(At(base_ + start) + ": " + std::to_string(remaining) +
                                   " byte(s) left where an element (tag and length) was expected");
  const uint8_t tag = static_cast<uint8_t>(data_[pos_]);
  if ((tag & 0x1f) == 0x1f)
    return Status::InvalidArgument(At(base_ + start) + ": tag " + TagText(tag) +
                                   " has a high tag number, which PKCS#7 never uses");
  const uint8_t first = static_cast<uint8_t>(data_[pos_ + 1]);
  size_t header = 2;
  uint64_t length = first;
  if (first == 0x80)
    return Status::InvalidArgument(At(base_ + start) + ": indefinite length (BER), not DER");
  if (first & 0x80) {
    const size_t n = first & 0x7f;
    if (n > 4)
      return Status::InvalidArgument(At(base_ + start) + ": a length of " + std::to_string(n) +
                                     " bytes; a module signature needs at most 4");
    if (remaining < 2 + n)
      return Status::InvalidArgument(At(base_ + start) + ": the length's " + std::to_string(n) +
                                     " bytes are cut off");
    length = 0;
    for (size_t i = 0; i < n; ++i) length = (length << 8) | static_cast<uint8_t>(data_[pos_ + 2 + i]);
    header += n;
  }
  if (length > remaining - header)
    return Status::InvalidArgument(At(base_ + start) + ": element " + TagText(tag) + " claims " +
                                   std::to_string(length) + " bytes, only " +
                                   std::to_string(remaining - header) + " remain");
  Element e;
  e.tag = tag;
  e.offset = base_ + start;
  e.content_offset = base_ + start + header;
  e.content = data_.substr(pos_ + header, static_cast<size_t>(length));
  pos_ += header + static_cast<size_t>(length);
  return e;
}

Result<Element> Reader::Expect(uint8_t tag, const char* what) {
  if (done())
    return Status::InvalidArgument(At(base_ + pos_) + ": " + what + " (tag " + TagText(tag) +
                                   ") expected, found the end of its enclosing element");
  RESMEM_ASSIGN_OR_RETURN(Element e, Next());
  if (e.tag != tag)
    return Status::InvalidArgument(At(e.offset) + ": " + what + " (tag " + TagText(tag) +
                                   ") expected, found tag " + TagText(e.tag));
  return e;
}

Result<std::string> OidText(std::string_view content) {
  if (content.empty()) return Status::InvalidArgument("an OBJECT IDENTIFIER with no contents");
  std::string out;
  uint64_t value = 0;
  bool first = true;
  for (size_t i = 0; i < content.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(content[i]);
    if (value > (UINT64_MAX >> 7))
      return Status::InvalidArgument("an OBJECT IDENTIFIER sub-identifier does not fit 64 bits");
    value = (value << 7) | (b & 0x7f);
    if (b & 0x80) continue;
    if (first) {  // X.690 8.19.4: the first sub-identifier holds the first two arcs
      const uint64_t arc0 = value < 40 ? 0 : value < 80 ? 1 : 2;
      out = std::to_string(arc0) + "." + std::to_string(value - arc0 * 40);
      first = false;
    } else {
      out += "." + std::to_string(value);
    }
    value = 0;
  }
  if (static_cast<uint8_t>(content.back()) & 0x80)
    return Status::InvalidArgument("an OBJECT IDENTIFIER's last sub-identifier does not end");
  return out;
}

Result<std::string> DirectoryString(const Element& e) {
  switch (e.tag) {
    case kUtf8String:
    case kPrintableString:
    case kIa5String:
    case kVisibleString:
    case kT61String:
      return std::string(e.content);
    case kBmpString: {
      if (e.content.size() % 2)
        return Status::InvalidArgument(At(e.offset) + ": a BMPString of an odd number of bytes");
      std::string out;
      for (size_t i = 0; i < e.content.size(); i += 2) {
        const unsigned c = (static_cast<uint8_t>(e.content[i]) << 8) | static_cast<uint8_t>(e.content[i + 1]);
        if (c < 0x80) {
          out += static_cast<char>(c);
        } else if (c < 0x800) {
          out += static_cast<char>(0xc0 | (c >> 6));
          out += static_cast<char>(0x80 | (c & 0x3f));
        } else {
          out += static_cast<char>(0xe0 | (c >> 12));
          out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (c & 0x3f));
        }
      }
      return out;
    }
    default:
      return Status::InvalidArgument(At(e.offset) + ": a name attribute of string type " +
                                     TagText(e.tag) + ", which no certificate name uses");
  }
}

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const uint8_t b = static_cast<uint8_t>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace resmem::der
