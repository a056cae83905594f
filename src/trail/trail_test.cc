#include <gtest/gtest.h>

#include "trail/content_hash.h"
#include "trail/trail.h"

namespace contextd::trail {
namespace {

TEST(ContentHashTest, KnownVectors) {
  EXPECT_EQ(ContentHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ContentHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(EventKindTest, NamesRoundTrip) {
  for (EventKind k : {EventKind::kToolCall, EventKind::kToolResult, EventKind::kBranchCreated,
                      EventKind::kBranchReturned, EventKind::kWarning, EventKind::kForceReturn}) {
    auto parsed = ParseEventKind(EventKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_EQ(ParseEventKind("nope").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FoldedViewTextTest, HeaderCarriesTotals) {
  FoldedView view;
  view.root_scope_id = "ses_1";
  view.tokens_unfolded = 1000;
  view.tokens_folded = 100;
  view.scopes_folded = 2;
  std::string text = FoldedViewText(view);
  EXPECT_NE(text.find("1000 tokens unfolded, 100 tokens folded (90% less)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace contextd::trail
