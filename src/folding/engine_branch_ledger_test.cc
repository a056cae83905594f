#include "folding/engine_branch_ledger.h"

#include "folding/testing/branch_manager_fixture.h"
#include "folding/text.h"

// The ledger on a manual executor, called from its tasks (as the MCP gateway calls it); the
// calls from other threads (the model gateway's) are exercised against the real executor by the
// agent tests (tests/agents).
namespace contextd::folding {
namespace {

class EngineBranchLedgerTest : public testing::BranchManagerTest {
 protected:
  void SetUp() override {
    MakeManager();
    ledger_ = std::make_unique<EngineBranchLedger>(exec_, *mgr_, store_, nullptr, counter_);
  }
  std::unique_ptr<EngineBranchLedger> ledger_;
};

TEST_F(EngineBranchLedgerTest, FindsATenantsBranchWithWhatItFoldedAway) {
  auto created = Create(testing::Req("p", 100));
  ASSERT_TRUE(created.ok()) << created.status();
  auto found = ledger_->Find("local", created->branch_id);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->session, s1_);
  EXPECT_FALSE(found->ended);
  EXPECT_EQ(found->status, "active");
  EXPECT_FALSE(ledger_->Find("other", created->branch_id).has_value());
  EXPECT_FALSE(ledger_->Find("local", "br_missing").has_value());

  ASSERT_TRUE(Return(created->branch_id, "two words").ok());
  found = ledger_->Find("local", created->branch_id);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->ended);
  EXPECT_EQ(found->status, "completed");
  EXPECT_EQ(found->summary, "two words");
  EXPECT_EQ(found->tokens_folded, found->tokens_used - 2);
}

TEST_F(EngineBranchLedgerTest, ChargesOnTheExecutorAndWordsTheWarningOnce) {
  auto created = Create(testing::Req("p", 100));
  ASSERT_TRUE(created.ok()) << created.status();
  auto first = Run([&] { return ledger_->Charge(s1_, "", testing::Rec(10)); });
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome.branch_id, created->branch_id);
  EXPECT_EQ(first->warning, "");
  auto crossing = Run([&] { return ledger_->Charge(s1_, created->branch_id, testing::Rec(75)); });
  ASSERT_TRUE(crossing.ok()) << crossing.status();
  EXPECT_TRUE(crossing->outcome.warning_crossed);
  EXPECT_EQ(crossing->warning,
            WarningText(created->branch_id, crossing->outcome.used, crossing->outcome.allocated));
  auto past = Run([&] { return ledger_->Charge(s1_, "", testing::Rec(1)); });
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(past->warning, "");
  auto exhausted = Run([&] { return ledger_->Charge(s1_, "", testing::Rec(50)); });
  ASSERT_TRUE(exhausted.ok());
  EXPECT_TRUE(exhausted->outcome.exhausted);
  auto ended = Run([&] { return ledger_->Charge(s1_, created->branch_id, testing::Rec(1)); });
  EXPECT_EQ(ended.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(EngineBranchLedgerTest, WithoutATrailNothingIsKept) {
  ToolCallRecord call{"", "Read", "{}", "text", false, 1, 1};
  ledger_->Record(s1_, {call});
  EXPECT_EQ(exec_.RunUntilIdle(), 0);
  auto refs = Run([&] { return ledger_->Archive(s1_, {call, call}); });
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_FALSE(refs[0].has_value());
  EXPECT_FALSE(refs[1].has_value());
}

}  // namespace
}  // namespace contextd::folding
