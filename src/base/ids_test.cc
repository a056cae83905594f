#include "base/ids.h"

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

TEST(IdsTest, HexEncode) { EXPECT_EQ(HexEncode(std::string("\x00\xff\x10", 3)), "00ff10"); }

}  // namespace
}  // namespace contextd::base
