// Branch state coherence between engines sharing one PostgreSQL (decision 0025): two
// BranchManagers, each over its own pool and executor, serve one session alternately, as two
// contextd instances do when a client's requests land on both. Their caches must not diverge
// and a budget must not be overspent by splitting charges across them.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "folding/testing/fakes.h"
#include "store/postgres/pg_branch_store.h"
#include "store/testing/pg_backend.h"
#include "store/testing/pg_test_server.h"

namespace contextd::store {
namespace {

using folding::BranchManager;
using folding::SessionKey;

// A BranchStore that runs `before_commit` once, right before its next Commit: another instance's
// write landing between this instance's staleness check and its own write.
class InterleavingStore final : public folding::BranchStore {
 public:
  explicit InterleavingStore(folding::BranchStore& inner) : inner_(inner) {}
  std::function<void()> before_commit;
  int aborted = 0;

  absl::Status Commit(const folding::BranchWrite& write) override {
    if (before_commit) {
      auto fn = std::move(before_commit);
      before_commit = nullptr;
      fn();
    }
    absl::Status st = inner_.Commit(write);
    if (st.code() == absl::StatusCode::kAborted) ++aborted;
    return st;
  }
  absl::StatusOr<std::optional<folding::Branch>> Get(std::string_view id) override {
    return inner_.Get(id);
  }
  absl::StatusOr<std::vector<folding::Branch>> ListSession(const SessionKey& s) override {
    return inner_.ListSession(s);
  }
  absl::StatusOr<std::vector<folding::Branch>> ListLive() override { return inner_.ListLive(); }
  absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view id, int limit) override {
    return inner_.GetRecentCharges(id, limit);
  }
  bool shared() const override { return inner_.shared(); }
  absl::StatusOr<int64_t> SessionStamp(const SessionKey& s) override {
    return inner_.SessionStamp(s);
  }

 private:
  folding::BranchStore& inner_;
};

class SharedBranchesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CONTEXTD_REQUIRE_PG_OR_SKIP();
    backend_ = std::make_unique<testing::PgBackend>();
    auto a = PgBranchStore::Open(backend_->options(2));
    auto b = PgBranchStore::Open(backend_->options(2));
    ASSERT_TRUE(a.ok() && b.ok());
    pg_a_ = std::move(*a);
    pg_b_ = std::move(*b);
    store_a_ = std::make_unique<InterleavingStore>(*pg_a_);
    folding::FoldingConfig config;
    config.branch_creation_rate_limit = "1000/second";
    a_ = std::make_unique<BranchManager>(config, exec_a_, *store_a_, counter_, scrubber_, nullptr);
    b_ = std::make_unique<BranchManager>(config, exec_b_, *pg_b_, counter_, scrubber_, nullptr);
  }
  void TearDown() override {
    if (a_) exec_a_.Post([&] { a_.reset(); });
    if (b_) exec_b_.Post([&] { b_.reset(); });
    exec_a_.RunUntilIdle();
    exec_b_.RunUntilIdle();
  }

  // Runs `fn` on `exec` (the manager's executor) now.
  static void On(base::ManualExecutor& exec, const std::function<void()>& fn) {
    exec.Post(fn);
    exec.RunUntilIdle();
  }
  std::string CreateOnA(int64_t budget) {
    std::string id;
    On(exec_a_, [&] {
      folding::CreateRequest r;
      r.description = "explore";
      r.prompt = "look";  // 1 token
      r.budget = budget;
      auto created = a_->Create(s_, r);
      ASSERT_TRUE(created.ok()) << created.status();
      id = created->branch_id;
    });
    return id;
  }
  absl::StatusOr<folding::ChargeOutcome> Charge(base::ManualExecutor& exec, BranchManager& m,
                                                const std::string& id, int64_t tokens) {
    absl::StatusOr<folding::ChargeOutcome> out = absl::UnknownError("not run");
    On(exec, [&] { out = m.Charge(s_, id, {"tool_result", "read", "x", tokens}); });
    return out;
  }
  int64_t UsedSeenBy(base::ManualExecutor& exec, BranchManager& m, const std::string& id) {
    int64_t used = -1;
    On(exec, [&] {
      auto st = m.Status(s_, id);
      ASSERT_TRUE(st.ok()) << st.status();
      used = st->branches.at(0).tokens_used;
    });
    return used;
  }

  base::FakeClock clock_;
  base::ManualExecutor exec_a_{clock_}, exec_b_{clock_};
  folding::testing::WordTokenCounter counter_;
  folding::testing::FakeScrubber scrubber_;
  std::unique_ptr<testing::PgBackend> backend_;
  std::unique_ptr<PgBranchStore> pg_a_, pg_b_;
  std::unique_ptr<InterleavingStore> store_a_;
  std::unique_ptr<BranchManager> a_, b_;
  SessionKey s_{"acme", "default", "sid_shared"};
};

TEST_F(SharedBranchesTest, AStaleUpdateIsAbortedAndAppliesNothing) {
  const std::string id = CreateOnA(1000);
  auto row = pg_a_->Get(id);
  ASSERT_TRUE(row.ok() && row->has_value());
  folding::BranchUpdate u;
  u.id = id;
  u.status = folding::BranchStatus::kActive;
  u.tokens_used = 50;
  u.expected_version = (*row)->version;
  ASSERT_TRUE(pg_b_->Commit({{}, {u}, {}}).ok());
  u.tokens_used = 70;  // computed from the same, now stale, version
  EXPECT_EQ(pg_a_->Commit({{}, {u}, {}}).code(), absl::StatusCode::kAborted);
  EXPECT_EQ((*pg_a_->Get(id))->tokens_used, 50);
  EXPECT_EQ((*pg_a_->Get(id))->version, (*row)->version + 1);
  u.expected_version = -1;  // unconditional
  EXPECT_TRUE(pg_a_->Commit({{}, {u}, {}}).ok());
  u.id = "br_unknown";
  EXPECT_EQ(pg_a_->Commit({{}, {u}, {}}).code(), absl::StatusCode::kNotFound);
}

TEST_F(SharedBranchesTest, ChargesOnTwoInstancesAddUpOnBoth) {
  const std::string id = CreateOnA(1000);
  ASSERT_TRUE(Charge(exec_a_, *a_, id, 100).ok());
  auto on_b = Charge(exec_b_, *b_, id, 100);  // b loads the session from the store
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  EXPECT_EQ(on_b->used, 201);                 // prompt + 100 + 100
  auto on_a = Charge(exec_a_, *a_, id, 100);  // a's cache is stale: it reloads first
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  EXPECT_EQ(on_a->used, 301);
  EXPECT_EQ(UsedSeenBy(exec_a_, *a_, id), 301);
  EXPECT_EQ(UsedSeenBy(exec_b_, *b_, id), 301);
  EXPECT_EQ((*pg_a_->Get(id))->tokens_used, 301);
  EXPECT_EQ(store_a_->aborted, 0);  // the staleness check, not a conflict, caught it
}

TEST_F(SharedBranchesTest, ABudgetCannotBeOverspentBySplittingChargesAcrossInstances) {
  const std::string id = CreateOnA(300);
  On(exec_b_, [&] { ASSERT_TRUE(b_->LoadSession(s_).ok()); });
  ASSERT_TRUE(Charge(exec_a_, *a_, id, 200).ok());
  // b cached the branch at 1/300; charging 200 more on that cache would reach 401.
  auto on_b = Charge(exec_b_, *b_, id, 200);
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  EXPECT_TRUE(on_b->exhausted);
  EXPECT_EQ(on_b->used, 300);
  auto row = pg_a_->Get(id);
  EXPECT_EQ((*row)->status, folding::BranchStatus::kBudgetExhausted);
  EXPECT_LE((*row)->tokens_used, 300);
  // a learns it on its next use.
  auto on_a = Charge(exec_a_, *a_, id, 1);
  EXPECT_EQ(on_a.status().code(), absl::StatusCode::kFailedPrecondition) << on_a.status();
}

TEST_F(SharedBranchesTest, AWriteRacingThePeerBetweenCheckAndCommitIsRetriedOnFreshState) {
  const std::string id = CreateOnA(300);
  On(exec_b_, [&] { ASSERT_TRUE(b_->LoadSession(s_).ok()); });
  // a checks its cache (fresh), then b's charge of 200 commits before a's own write.
  store_a_->before_commit = [&] { ASSERT_TRUE(Charge(exec_b_, *b_, id, 200).ok()); };
  auto on_a = Charge(exec_a_, *a_, id, 200);
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  EXPECT_EQ(store_a_->aborted, 1);
  EXPECT_TRUE(on_a->exhausted);  // retried on 201/300: 200 more does not fit
  auto row = pg_a_->Get(id);
  EXPECT_EQ((*row)->status, folding::BranchStatus::kBudgetExhausted);
  EXPECT_EQ((*row)->tokens_used, 300);
}

}  // namespace
}  // namespace contextd::store
