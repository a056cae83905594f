#include "folding/text.h"

#include <gtest/gtest.h>

namespace contextd::folding {
namespace {

TEST(FormatWallMillisTest, WritesRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(FormatWallMillis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatWallMillis(1'750'000'400'000), "2025-06-15T15:13:20.000Z");
  EXPECT_EQ(FormatWallMillis(1'709'251'199'999), "2024-02-29T23:59:59.999Z");  // leap day
  EXPECT_EQ(FormatWallMillis(1'795'507'200'007), "2026-11-24T08:00:00.007Z");
  EXPECT_EQ(FormatWallMillis(253'402'300'799'999), "9999-12-31T23:59:59.999Z");
}

TEST(FormatWallMillisTest, TimesBeforeTheEpochAndPastYear9999StayCalendarCorrect) {
  EXPECT_EQ(FormatWallMillis(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatWallMillis(253'402'300'800'000), "10000-01-01T00:00:00.000Z");
}

TEST(ForceReturnedTextTest, NamesTheBranchTheReasonAndItsSummary) {
  EXPECT_EQ(ForceReturnedText("br_x", "deadline passed (timeout 60 s)", "read two files"),
            "branch br_x was force-returned (deadline passed (timeout 60 s)) with partial "
            "results; its summary: read two files");
  EXPECT_EQ(ForceReturnedText("br_x", "deadline passed (timeout 1 s)", ""),
            "branch br_x was force-returned (deadline passed (timeout 1 s)) with partial results");
}

}  // namespace
}  // namespace contextd::folding
