#include "base/ids.h"

#include <chrono>
#include <cstdint>
#include <set>

#include "gtest/gtest.h"

namespace contextd::base {
namespace {

TEST(IdsTest, RandomIdHasPrefixAndLength) {
  std::string id = RandomId("br_", 16);
  EXPECT_EQ(id.rfind("br_", 0), 0u);
  EXPECT_EQ(id.size(), 3u + 32u);
}

TEST(IdsTest, RandomIdsDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(RandomId("", 16));
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(IdsTest, TimeOrderedIdsSortByTimeAndDiffer) {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string first = TimeOrderedId("br_");
  EXPECT_EQ(first.rfind("br_", 0), 0u);
  ASSERT_EQ(first.size(), 3u + 32u);
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef", 3), std::string::npos);
  // The first 12 hex characters are the creation time in milliseconds.
  const int64_t stamped = std::stoll(first.substr(3, 12), nullptr, 16);
  EXPECT_GE(stamped, before);
  EXPECT_LE(stamped, before + 60'000);
  std::set<std::string> seen{first};
  std::string previous = first;
  for (int i = 0; i < 1000; ++i) {
    std::string id = TimeOrderedId("br_");
    EXPECT_GE(id.substr(0, 15), previous.substr(0, 15));  // never earlier (same clock)
    previous = id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1001u);  // random bits keep ids of one millisecond apart
}

TEST(IdsTest, HexEncode) { EXPECT_EQ(HexEncode(std::string("\x00\xff\x10", 3)), "00ff10"); }

}  // namespace
}  // namespace contextd::base
