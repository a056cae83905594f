#include "folding/config.h"

#include <gtest/gtest.h>

namespace contextd::folding {
namespace {

TEST(ConfigTest, DefaultsAreTheSeedsAndValid) {
  FoldingConfig c;
  EXPECT_EQ(c.default_budget, 8192);
  EXPECT_EQ(c.max_budget, 32768);
  EXPECT_EQ(c.max_depth, 3);
  EXPECT_EQ(c.default_timeout_seconds, 300);
  EXPECT_EQ(c.max_timeout_seconds, 600);
  EXPECT_DOUBLE_EQ(c.injection_budget_ratio, 0.2);
  EXPECT_DOUBLE_EQ(c.memory_min_confidence, 0.7);
  EXPECT_EQ(c.memory_max_items, 10);
  EXPECT_EQ(c.max_concurrent_branches_per_session, 10);
  EXPECT_EQ(c.max_concurrent_branches_per_instance, 100);
  EXPECT_EQ(c.branch_creation_rate_limit, "5/minute");
  EXPECT_EQ(c.session_idle_timeout_seconds, 1800);
  EXPECT_EQ(c.branch_view, "isolated");
  EXPECT_TRUE(c.branch_view_keep_opening);
  EXPECT_TRUE(c.Validate().ok());
}

void ExpectBadKey(const FoldingConfig& c, const std::string& key) {
  absl::Status st = c.Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << key;
  EXPECT_EQ(st.message().rfind("context_folding." + key + ":", 0), 0u) << st.message();
}

TEST(ConfigTest, ValidateNamesTheBadKey) {
  FoldingConfig c;
  c.default_budget = 0;
  ExpectBadKey(c, "default_budget");
  c = {};
  c.default_budget = 40000;
  ExpectBadKey(c, "default_budget");
  c = {};
  c.max_budget = 0;
  ExpectBadKey(c, "max_budget");
  c = {};
  c.max_depth = 0;
  ExpectBadKey(c, "max_depth");
  c = {};
  c.default_timeout_seconds = 601;
  ExpectBadKey(c, "default_timeout_seconds");
  c = {};
  c.max_timeout_seconds = 0;
  ExpectBadKey(c, "max_timeout_seconds");
  c = {};
  c.injection_budget_ratio = 1.5;
  ExpectBadKey(c, "injection_budget_ratio");
  c = {};
  c.memory_min_confidence = -0.1;
  ExpectBadKey(c, "memory_min_confidence");
  c = {};
  c.memory_max_items = -1;
  ExpectBadKey(c, "memory_max_items");
  c = {};
  c.max_concurrent_branches_per_session = 0;
  ExpectBadKey(c, "max_concurrent_branches_per_session");
  c = {};
  c.max_concurrent_branches_per_instance = 5;
  ExpectBadKey(c, "max_concurrent_branches_per_session");
  c = {};
  c.max_concurrent_branches_per_instance = 0;
  ExpectBadKey(c, "max_concurrent_branches_per_instance");
  c = {};
  c.branch_creation_rate_limit = "5/fortnight";
  ExpectBadKey(c, "branch_creation_rate_limit");
  c = {};
  c.session_idle_timeout_seconds = 0;
  ExpectBadKey(c, "session_idle_timeout_seconds");
  c = {};
  c.branch_view = "Isolated";
  ExpectBadKey(c, "branch_view");
  c.branch_view = "inherited";
  EXPECT_TRUE(c.Validate().ok());
}

TEST(RateLimitTest, ParsesUnits) {
  auto r = ParseRateLimit("5/minute");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->count, 5);
  EXPECT_EQ(r->window, std::chrono::seconds(60));
  r = ParseRateLimit("12/second");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->count, 12);
  EXPECT_EQ(r->window, std::chrono::seconds(1));
  r = ParseRateLimit("100/hour");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->window, std::chrono::seconds(3600));
}

TEST(RateLimitTest, RejectsMalformedAndQuotesTheValue) {
  for (const char* bad : {"", "5", "/minute", "0/minute", "-1/minute", "5/", "5/day", "x/minute",
                          "5 /minute", "5/minute/x"}) {
    auto r = ParseRateLimit(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(std::string("\"") + bad + "\""), std::string_view::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("branch_creation_rate_limit"), std::string_view::npos);
  }
}

}  // namespace
}  // namespace contextd::folding
