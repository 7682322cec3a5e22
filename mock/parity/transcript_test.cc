// Parsing, normalising and diffing parity transcripts (transcript.h).
#include "mock/parity/transcript.h"

#include "gtest/gtest.h"

namespace resmem::parity {
namespace {

TEST(TranscriptTest, ParsesNameAndResult) {
  auto t = ParseTranscript("probe: resmem-parity 1\n# comment\n\nread_0: 4096 pos=4096\n", "kmod",
                           "x.txt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->lines.size(), 2u);
  EXPECT_EQ(t->lines[1].name, "read_0");
  EXPECT_EQ(t->lines[1].result, "4096 pos=4096");
}

TEST(TranscriptTest, BadLinesNameTheSourceAndLine) {
  auto t = ParseTranscript("read_0: 1\ngarbage\n", "kmod", "golden/kmod.txt");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("golden/kmod.txt:2"), std::string::npos);
  auto twice = ParseTranscript("a: 1\na: 2\n", "kmod", "k");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("appears twice"), std::string::npos);
  EXPECT_FALSE(ParseTranscript("", "kmod", "k").ok());
}

TEST(TranscriptTest, NormalisesOnlyTheExactKnownFuseAnswer) {
  Transcript fuse{"fuse", {{"fstat", "type=reg size=size"}, {"mmap_private_rw", "EACCES"}}};
  std::vector<std::string> notes;
  Transcript n = Normalise(fuse, &notes);
  EXPECT_EQ(n.lines[0].result, "type=chr size=0");
  EXPECT_EQ(n.lines[1].result, "EACCES");  // not the known answer: left to show in the diff
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("S_ISREG"), std::string::npos);
  // The module's own lines are never rewritten.
  Transcript kmod{"kmod", {{"fstat", "type=reg size=size"}}};
  EXPECT_EQ(Normalise(kmod, nullptr).lines[0].result, "type=reg size=size");
}

TEST(TranscriptTest, DiffNamesEveryBodysAnswer) {
  Transcript a{"kmod", {{"x", "1"}, {"y", "2"}}};
  Transcript b{"fuse", {{"x", "1"}, {"y", "3"}}};
  Transcript c{"sim", {{"x", "1"}}};
  EXPECT_TRUE(DiffTranscripts({a, a}).empty());
  const auto d = DiffTranscripts({a, b, c});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "y: kmod='2' fuse='3' sim=<missing>");
  Transcript swapped{"sim", {{"y", "2"}, {"x", "1"}}};
  const auto o = DiffTranscripts({a, swapped});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_NE(o[0].find("order"), std::string::npos);
}

}  // namespace
}  // namespace resmem::parity
