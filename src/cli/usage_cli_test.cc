// `contextd usage --since`: durations, dates and unix seconds.
#include "cli/usage_cli.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace contextd::cli {
namespace {

TEST(UsageSinceTest, DurationsDatesAndUnixSeconds) {
  const int64_t now = 1'750'000'000'000;
  EXPECT_EQ(*ParseSince("30m", now), now - 30 * 60'000);
  EXPECT_EQ(*ParseSince("24h", now), now - 24 * 3'600'000);
  EXPECT_EQ(*ParseSince("7d", now), now - 7 * 86'400'000LL);
  EXPECT_EQ(*ParseSince("2025-06-01", now), 1'748'736'000'000);
  EXPECT_EQ(*ParseSince("1970-01-01", now), 0);
  EXPECT_EQ(*ParseSince("1748736000", now), 1'748'736'000'000);
  for (const char* bad : {"", "h", "-1d", "2025-13-01", "yesterday", "12x"}) {
    EXPECT_FALSE(ParseSince(bad, now).ok()) << bad;
  }
}

}  // namespace
}  // namespace contextd::cli
