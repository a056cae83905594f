#include "folding/branch.h"

#include <gtest/gtest.h>

namespace contextd::folding {
namespace {

constexpr BranchStatus kAll[] = {BranchStatus::kCreated,         BranchStatus::kActive,
                                 BranchStatus::kCompleted,       BranchStatus::kTimeout,
                                 BranchStatus::kBudgetExhausted, BranchStatus::kFailed};

TEST(BranchStatusTest, NamesRoundTrip) {
  for (BranchStatus s : kAll) {
    auto parsed = ParseBranchStatus(BranchStatusName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(std::string_view(BranchStatusName(BranchStatus::kBudgetExhausted)), "budget_exhausted");
  auto bad = ParseBranchStatus("done");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("done"), std::string_view::npos);
}

TEST(BranchStatusTest, TransitionTableIsExactlyTheIssuesTable) {
  int allowed = 0;
  for (BranchStatus from : kAll) {
    for (BranchStatus to : kAll) {
      bool expected = (from == BranchStatus::kCreated &&
                       (to == BranchStatus::kActive || to == BranchStatus::kFailed)) ||
                      (from == BranchStatus::kActive &&
                       (to == BranchStatus::kCompleted || to == BranchStatus::kTimeout ||
                        to == BranchStatus::kBudgetExhausted || to == BranchStatus::kFailed));
      EXPECT_EQ(IsValidTransition(from, to), expected)
          << BranchStatusName(from) << " -> " << BranchStatusName(to);
      allowed += expected;
    }
  }
  EXPECT_EQ(allowed, 6);
}

TEST(BranchStatusTest, TerminalStatesAreFinal) {
  for (BranchStatus s : kAll) {
    EXPECT_EQ(IsTerminal(s), s != BranchStatus::kCreated && s != BranchStatus::kActive);
    if (IsTerminal(s)) {
      for (BranchStatus to : kAll) EXPECT_FALSE(IsValidTransition(s, to));
    }
  }
}

TEST(BranchStatusTest, BadTransitionNamesBranchAndBothStates) {
  absl::Status st = CheckTransition("br_1", BranchStatus::kCompleted, BranchStatus::kActive);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "branch br_1 cannot go from completed to active (completed is final)");
  st = CheckTransition("br_2", BranchStatus::kCreated, BranchStatus::kTimeout);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("created to timeout"), std::string_view::npos);
  EXPECT_TRUE(CheckTransition("br_3", BranchStatus::kActive, BranchStatus::kTimeout).ok());
}

TEST(Utf8Test, LengthAndPrefixCountCodePoints) {
  std::string s =
      "a\xC3\xA9\xE2\x82\xAC"
      "b";  // a, e-acute, euro, b
  EXPECT_EQ(Utf8Length(s), 4u);
  EXPECT_EQ(Utf8Prefix(s, 2), "a\xC3\xA9");
  EXPECT_EQ(Utf8Prefix(s, 3), "a\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(Utf8Prefix(s, 10), s);
  EXPECT_EQ(Utf8Prefix(s, 0), "");
}

TEST(SessionKeyTest, EqualityAndHashUseAllParts) {
  SessionKey a{"t", "p", "s"};
  SessionKey b{"t", "p", "s"};
  SessionKey c{"t", "q", "s"};
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  EXPECT_EQ(SessionKeyHash()(a), SessionKeyHash()(b));
  EXPECT_EQ(a.ToString(), "t/p/s");
}

}  // namespace
}  // namespace contextd::folding
