#include "mock/machine/e820_text.h"

#include <gtest/gtest.h>

namespace resmem::sim {
namespace {

TEST(E820MapLine, CurrentFormIsInclusive) {
  auto r = ParseE820MapLine("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->who, "BIOS-e820");
  EXPECT_EQ(r->entry.start, 0u);
  EXPECT_EQ(r->entry.end, 0x9fc00u);
  EXPECT_EQ(r->entry.type, E820Type::kRam);
  EXPECT_FALSE(r->old_form);
  auto p = ParseE820MapLine("user: [mem 0x0000000100000000-0x000000017fffffff] persistent (type 12)");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->entry.type, E820Type::kPram);
  EXPECT_EQ(p->entry.end, 0x180000000u);
}

TEST(E820MapLine, OldFormIsExclusive) {
  // From a 2.6.9 boot log (mock/machine/corpus of the project).
  auto r = ParseE820MapLine(" BIOS-e820: 00000000e7ff9380 - 00000000e8000000 (ACPI data)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->old_form);
  EXPECT_EQ(r->entry.start, 0xe7ff9380u);
  EXPECT_EQ(r->entry.end, 0xe8000000u);
  EXPECT_EQ(r->entry.type, E820Type::kAcpi);
  auto t = ParseE820MapLine("BIOS-e820: 0000000100000000 - 0000000140000000 type 12");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->entry.type, E820Type::kPram);
  EXPECT_EQ(ParseE820MapLine("user: 0000000000000000 - 000000000009fc00 (ACPI NVS)")->entry.type,
            E820Type::kNvs);
}

TEST(E820MapLine, BadLinesSayWhatIsWrong) {
  auto msg = [](const std::string& l) {
    auto r = ParseE820MapLine(l);
    return r.ok() ? std::string("(parsed)") : r.status().message();
  };
  EXPECT_NE(msg("BIOS-e820: [mem 0x0000000000000000-0x00000000000").find("no ']'"), std::string::npos);
  EXPECT_NE(msg("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff]").find("no type"), std::string::npos);
  EXPECT_NE(msg("BIOS-e820: 0000000000000000 - 00000000").find("truncated"), std::string::npos);
  EXPECT_NE(msg("BIOS-e820: [mem 0x0000000000000000-0xffffffffffffffff] reserved").find("2^64"),
            std::string::npos);
  EXPECT_NE(msg("BIOS-e820: 0000000000000000 - 10000000000000000 (reserved)").find("16 hex digits"),
            std::string::npos);
  EXPECT_NE(msg("BIOS-e820: [mem 0x0000000000002000-0x0000000000001000] usable").find("not after"),
            std::string::npos);
  EXPECT_NE(msg("BIOS-e820: [mem 0x0-0xfff] sparkly").find("not an e820 type"), std::string::npos);
  EXPECT_NE(msg("hello world").find("not a map line"), std::string::npos);
}

TEST(E820EditLine, UpdateAndRemoveInBothForms) {
  auto u = ParseE820EditLine("e820: update [mem 0x7a1bd018-0x7a1cd057] usable ==> usable");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->start, 0x7a1bd018u);
  EXPECT_EQ(u->end, 0x7a1cd058u);
  EXPECT_EQ(u->from, E820Type::kRam);
  EXPECT_EQ(u->to, E820Type::kReservedKern);
  auto r = ParseE820EditLine("e820: update [mem 0x00000000-0x00000fff] usable ==> reserved");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->to, E820Type::kReserved);
  auto rm = ParseE820EditLine("e820: remove [mem 0x000a0000-0x000fffff] usable");
  ASSERT_TRUE(rm.ok());
  EXPECT_EQ(rm->to, E820Type::kHole);
  EXPECT_EQ(rm->from, E820Type::kRam);
  EXPECT_EQ(rm->end, 0x100000u);
  auto any = ParseE820EditLine("e820: remove [mem 0x000a0000-0x000fffff]");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->from, E820Type::kHole);
  auto old = ParseE820EditLine("e820 update range: 0000000000000000 - 0000000000010000 (usable) ==> (reserved)");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->end, 0x10000u);
  EXPECT_EQ(old->to, E820Type::kReserved);
  auto oldrm = ParseE820EditLine("e820 remove range: 00000000000a0000 - 0000000000100000 (usable)");
  ASSERT_TRUE(oldrm.ok());
  EXPECT_EQ(oldrm->start, 0xa0000u);
  EXPECT_FALSE(ParseE820EditLine("e820: update [mem 0x0-0xfff] usable").ok());
}

TEST(E820TypeWord, RoundTripsEveryType) {
  for (int t : {1, 2, 3, 4, 5, 7, 12, 20, 128, static_cast<int>(0xefffffff)}) {
    const E820Type type = static_cast<E820Type>(t);
    auto back = ParseE820TypeWord(E820TypeWord(type));
    ASSERT_TRUE(back.ok()) << t;
    EXPECT_EQ(*back, type) << E820TypeWord(type);
  }
  EXPECT_EQ(*ParseE820TypeWord("Persistent Memory (legacy)"), E820Type::kPram);
  EXPECT_EQ(*ParseE820TypeWord("(reserved)"), E820Type::kReserved);
}

}  // namespace
}  // namespace resmem::sim
