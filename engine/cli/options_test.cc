#include "engine/cli/options.h"

#include "gtest/gtest.h"

namespace resmem::cli {
namespace {

TEST(Options, ValuesFlagsAndPositionals) {
  Options o;
  ASSERT_TRUE(o.Parse({"scenarios/", "--backend", "kmod", "--seed=7", "--verbose", "--option", "a=b",
                       "--option", "c=d"},
                      {"--backend", "--seed", "--option"}, {"--verbose"})
                  .ok());
  EXPECT_EQ(o.positional, std::vector<std::string>{"scenarios/"});
  EXPECT_EQ(o.Get("--backend", ""), "kmod");
  EXPECT_EQ(*o.GetU64("--seed"), 7u);
  EXPECT_TRUE(o.Has("--verbose"));
  EXPECT_EQ(o.GetAll("--option").size(), 2u);
}

TEST(Options, RefusesUnknownAndMissingValues) {
  Options o;
  Status s = o.Parse({"--fast"}, {"--backend"}, {"--verbose"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--fast"), std::string::npos);
  EXPECT_NE(s.message().find("--backend"), std::string::npos);
  Options p;
  EXPECT_FALSE(p.Parse({"--backend"}, {"--backend"}, {}).ok());
  Options q;
  ASSERT_TRUE(q.Parse({"--seed", "-3"}, {"--seed"}, {}).ok());
  EXPECT_FALSE(q.GetU64("--seed").ok());
}

}  // namespace
}  // namespace resmem::cli
