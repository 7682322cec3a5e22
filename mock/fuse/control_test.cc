#include "mock/fuse/control.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace resmem::fuse_emu {
namespace {

TEST(ControlParse, EveryVerbWithItsArguments) {
  auto r = ParseControl(
      "eio resmem0 4096 8192\n"
      "delay resmem0 0x1000 2M 500  # slow\n"
      "\n"
      "refuse-mmap resmem1\n"
      "refuse-open resmem0 EBUSY\n"
      "refuse-open resmem0 13\n"
      "fill resmem0 0 64 7\n"
      "clear\n"
      "clear resmem0\n"
      "die\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 9u);
  EXPECT_EQ((*r)[0].verb, ControlVerb::kEio);
  EXPECT_EQ((*r)[0].offset, 4096u);
  EXPECT_EQ((*r)[0].length, 8192u);
  EXPECT_EQ((*r)[1].offset, 0x1000u);
  EXPECT_EQ((*r)[1].length, 2u << 20);
  EXPECT_EQ((*r)[1].delay_us, 500u);
  EXPECT_EQ((*r)[2].device, "resmem1");
  EXPECT_EQ((*r)[3].error, EBUSY);
  EXPECT_EQ((*r)[4].error, EACCES);
  EXPECT_EQ((*r)[5].seed, 7u);
  EXPECT_EQ((*r)[6].device, "");
  EXPECT_EQ((*r)[7].device, "resmem0");
  EXPECT_EQ((*r)[8].verb, ControlVerb::kDie);
  EXPECT_EQ((*r)[3].Describe(), "refuse-open resmem0 EBUSY");
}

TEST(ControlParse, BadInputNamesLineAndForm) {
  auto unknown = ParseControl("eio resmem0 0 4096\nexplode resmem0\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("line 2"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("commands: eio"), std::string::npos);

  auto arity = ParseControl("eio resmem0 4096");
  ASSERT_FALSE(arity.ok());
  EXPECT_NE(arity.status().message().find("expected 'eio DEV OFFSET LENGTH'"), std::string::npos);

  auto number = ParseControl("delay resmem0 abc 4096 10");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.status().message().find("OFFSET 'abc'"), std::string::npos);

  EXPECT_FALSE(ParseControl("eio resmem0 0 0").ok());
  EXPECT_FALSE(ParseControl("fill resmem0 4 64 1").ok());
  auto errname = ParseControl("refuse-open resmem0 ENOTANERRNO");
  ASSERT_FALSE(errname.ok());
  EXPECT_NE(errname.status().message().find("errno name"), std::string::npos);
}

TEST(FillPattern, DependsOnSeedAndWord) {
  EXPECT_NE(FillPatternWord(1, 0), FillPatternWord(2, 0));
  EXPECT_NE(FillPatternWord(1, 0), FillPatternWord(1, 1));
  EXPECT_EQ(FillPatternWord(5, 9), FillPatternWord(5, 9));
}

}  // namespace
}  // namespace resmem::fuse_emu
