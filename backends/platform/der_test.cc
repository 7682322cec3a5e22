// The DER reader on hand-made encodings: lengths in each form, OIDs, strings, and what it refuses.
#include <gtest/gtest.h>

#include "backends/platform/der.h"

namespace resmem::der {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

TEST(Der, ShortAndLongLengthsAndNesting) {
  // SEQUENCE { INTEGER 5, OCTET STRING (130 bytes, long form 0x81 0x82) }
  std::string inner = Bytes({0x02, 0x01, 0x05}) + Bytes({0x04, 0x81, 0x82}) + std::string(130, 'x');
  std::string seq = Bytes({0x30, 0x81, static_cast<int>(inner.size())}) + inner;
  Reader r(seq);
  auto s = r.Expect(kSequence, "the outer SEQUENCE");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(r.done());
  EXPECT_EQ(s->content_offset, 3u);
  Reader in = Reader::Inside(*s);
  auto i = in.Expect(kInteger, "an INTEGER");
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->content, std::string("\x05"));
  EXPECT_EQ(in.PeekTag(), kOctetString);
  auto o = in.Next();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->content.size(), 130u);
  EXPECT_EQ(o->offset, 6u);  // offsets count from the whole input
  EXPECT_TRUE(in.done());
  EXPECT_EQ(in.PeekTag(), 0);
}

TEST(Der, RefusesWhatIsNotDerOrDoesNotFit) {
  struct Case {
    std::string bytes;
    const char* says;
  } cases[] = {
      {Bytes({0x30}), "1 byte(s) left"},
      {Bytes({0x30, 0x80, 0x00, 0x00}), "indefinite length"},
      {Bytes({0x30, 0x85, 1, 2, 3, 4, 5}), "a length of 5 bytes"},
      {Bytes({0x30, 0x82, 0x01}), "cut off"},
      {Bytes({0x30, 0x05, 0x02, 0x01}), "claims 5 bytes, only 2 remain"},
      {Bytes({0x1f, 0x01, 0x00}), "high tag number"},
      {Bytes({0x30, 0x84, 0xff, 0xff, 0xff, 0xff}), "claims 4294967295 bytes"},
  };
  for (const auto& c : cases) {
    Reader r(c.bytes, 100);
    auto e = r.Next();
    ASSERT_FALSE(e.ok()) << c.says;
    EXPECT_NE(e.status().message().find(c.says), std::string::npos) << e.status().message();
    EXPECT_NE(e.status().message().find("DER at byte 100"), std::string::npos) << e.status().message();
  }
  const std::string integer = Bytes({0x02, 0x01, 0x00});
  Reader wrong(integer);
  auto w = wrong.Expect(kSequence, "the SignedData");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("the SignedData (tag 0x30) expected, found tag 0x02"),
            std::string::npos) << w.status().message();
  Reader empty(std::string_view{});
  EXPECT_NE(empty.Expect(kSet, "the signerInfos").status().message().find("found the end"),
            std::string::npos);
}

TEST(Der, ObjectIdentifiers) {
  EXPECT_EQ(*OidText(Bytes({0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02})),
            "1.2.840.113549.1.7.2");
  EXPECT_EQ(*OidText(Bytes({0x55, 0x04, 0x03})), "2.5.4.3");
  EXPECT_EQ(*OidText(Bytes({0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01})),
            "2.16.840.1.101.3.4.2.1");
  EXPECT_FALSE(OidText("").ok());
  EXPECT_FALSE(OidText(Bytes({0x55, 0x84})).ok());  // the last sub-identifier does not end
  EXPECT_FALSE(OidText(std::string(12, '\xff') + "\x01").ok());  // past 64 bits
}

TEST(Der, DirectoryStrings) {
  Element utf8{kUtf8String, 0, "DKMS module signing key", 2};
  EXPECT_EQ(*DirectoryString(utf8), "DKMS module signing key");
  const std::string bmp = Bytes({0x00, 'O', 0x00, 'K', 0x00, 0xe9});
  Element b{kBmpString, 0, bmp, 2};
  EXPECT_EQ(*DirectoryString(b), "OK\xc3\xa9");
  Element odd{kBmpString, 7, std::string_view(bmp).substr(0, 3), 9};
  EXPECT_NE(DirectoryString(odd).status().message().find("odd number"), std::string::npos);
  Element other{kInteger, 7, "x", 9};
  EXPECT_NE(DirectoryString(other).status().message().find("string type 0x02"), std::string::npos);
  EXPECT_EQ(Hex(Bytes({0x00, 0x7d, 0xff})), "007dff");
}

}  // namespace
}  // namespace resmem::der
