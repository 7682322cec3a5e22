// GoogleMock doubles of the Region seam and of HostMemory, for tests of code above the seams
// (the engine, the doctor) that want to script a provider's answers call by call:
//
//   auto provider = std::make_unique<resmem::MockRegionProvider>();
//   EXPECT_CALL(*provider, Open(testing::_))
//       .WillOnce(testing::Return(testing::ByMove(
//           resmem::Result<std::unique_ptr<resmem::RegionHandle>>(
//               resmem::Status::Errno(EBUSY, "busy")))));
//
// Link "//mock/region:region_mocks" (it brings gmock).
#ifndef RESMEM_MOCK_REGION_REGION_MOCKS_H_
#define RESMEM_MOCK_REGION_REGION_MOCKS_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/region.h"
#include "gmock/gmock.h"

namespace resmem {

class MockRegionProvider : public RegionProvider {
 public:
  MOCK_METHOD(std::string, name, (), (const, override));
  MOCK_METHOD(Result<std::vector<std::string>>, List, (), (override));
  MOCK_METHOD(Result<std::unique_ptr<RegionHandle>>, Open, (const OpenRequest& request),
              (override));
};

class MockRegionHandle : public RegionHandle {
 public:
  MOCK_METHOD(Result<RegionInfo>, Info, (), (override));
  MOCK_METHOD(Result<std::unique_ptr<HostMemory>>, Map, (const MapRequest& request), (override));
  MOCK_METHOD(Status, Ioctl, (unsigned long cmd, void* arg), (override));
};

class MockHostMemory : public HostMemory {
 public:
  MOCK_METHOD(uint64_t, size, (), (const, override));
  MOCK_METHOD(const MappingFacts&, facts, (), (const, override));
  MOCK_METHOD(uint64_t, address, (), (const, override));
  MOCK_METHOD(uint8_t*, data, (), (override));
  MOCK_METHOD(Status, Read, (uint64_t offset, void* out, uint64_t len), (override));
  MOCK_METHOD(Status, Write, (uint64_t offset, const void* in, uint64_t len), (override));
  MOCK_METHOD(std::string, Describe, (), (const, override));
};

}  // namespace resmem

#endif  // RESMEM_MOCK_REGION_REGION_MOCKS_H_
