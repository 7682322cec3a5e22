// The words stream signals wait on (staging.h): compared cyclically, as the driver's
// CU_STREAM_WAIT_VALUE_GEQ does, and only ever raised.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "engine/transfer/staging.h"

namespace resmem::transfer {
namespace {

TEST(SignalWords, ReachedIsCyclic) {
  volatile uint32_t word = 5;
  EXPECT_TRUE(Reached(&word, 5));
  EXPECT_TRUE(Reached(&word, 4));
  EXPECT_FALSE(Reached(&word, 6));
  word = 2;  // past the wrap: 2 comes after 0xfffffffe
  EXPECT_TRUE(Reached(&word, 0xfffffffeu));
  EXPECT_FALSE(Reached(&word, 3));
}

// Lane 0 releases every wait with the copy's last token on an error; a lane that then finishes
// an earlier segment must not lower the word (a wait queued behind it would never be met).
TEST(SignalWords, RaiseTokenNeverLowers) {
  volatile uint32_t word = 10;
  RaiseToken(&word, 40);  // the release
  RaiseToken(&word, 12);  // a late segment
  EXPECT_EQ(word, 40u);
  RaiseToken(&word, 41);
  EXPECT_EQ(word, 41u);
  word = 0xfffffff0u;
  RaiseToken(&word, 3);  // across the wrap, 3 is later
  EXPECT_EQ(word, 3u);
  RaiseToken(&word, 0xfffffff8u);  // earlier than 3
  EXPECT_EQ(word, 3u);
}

// Many lanes raising at once: the word ends at the latest token whatever the order.
TEST(SignalWords, RaiseTokenFromManyThreadsKeepsTheLatest) {
  volatile uint32_t word = 0;
  std::vector<std::thread> lanes;
  for (uint32_t t = 0; t < 8; ++t)
    lanes.emplace_back([&word, t] {
      for (uint32_t i = 0; i < 10000; ++i) RaiseToken(&word, i * 8 + t);
    });
  for (auto& l : lanes) l.join();
  EXPECT_EQ(word, 9999u * 8 + 7);
}

}  // namespace
}  // namespace resmem::transfer
