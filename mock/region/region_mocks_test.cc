// The gmock doubles compile, script answers and verify calls.
#include "mock/region/region_mocks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

namespace resmem {
namespace {

using ::testing::_;
using ::testing::ByMove;
using ::testing::Return;
using ::testing::ReturnRef;

TEST(RegionMocks, ProviderHandleAndMemoryCanBeScripted) {
  MockRegionProvider provider;
  EXPECT_CALL(provider, name()).WillRepeatedly(Return("mock"));
  EXPECT_CALL(provider, Open(_))
      .WillOnce(Return(ByMove(Result<std::unique_ptr<RegionHandle>>(
          Status::Errno(EBUSY, "scripted busy")))))
      .WillOnce([](const OpenRequest& req) {
        auto handle = std::make_unique<MockRegionHandle>();
        RegionInfo info;
        info.device = req.path;
        info.size = 4096;
        EXPECT_CALL(*handle, Info()).WillOnce(Return(info));
        EXPECT_CALL(*handle, Ioctl(42ul, nullptr))
            .WillOnce(Return(Status::Errno(ENOTTY, "scripted")));
        return Result<std::unique_ptr<RegionHandle>>(std::unique_ptr<RegionHandle>(std::move(handle)));
      });

  EXPECT_EQ(provider.name(), "mock");
  auto first = provider.Open({"/dev/resmem0"});
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), EBUSY);
  auto second = provider.Open({"/dev/resmem7"});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value()->Info().value().device, "/dev/resmem7");
  EXPECT_EQ(second.value()->Ioctl(42, nullptr).code(), ENOTTY);

  MockHostMemory mem;
  MappingFacts facts;
  facts.vm_pfnmap = true;
  EXPECT_CALL(mem, facts()).WillRepeatedly(ReturnRef(facts));
  EXPECT_CALL(mem, size()).WillRepeatedly(Return(4096u));
  EXPECT_CALL(mem, Describe()).WillRepeatedly(Return("mock memory"));
  EXPECT_CALL(mem, Read(0u, _, 16u)).WillOnce(Return(Status::Signal(7, "scripted SIGBUS")));
  EXPECT_TRUE(mem.facts().vm_pfnmap);
  uint8_t buf[16];
  EXPECT_EQ(mem.Read(0, buf, 16).space(), ErrorSpace::kSignal);
  // CheckSpan works against the mock's size.
  EXPECT_FALSE(CheckSpan(mem, 4000, 200, "read").ok());
}

}  // namespace
}  // namespace resmem
