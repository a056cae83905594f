// The contract of folding::BranchStore, run against every backend (SQLite, PostgreSQL): the
// proof that they implement the same interface. Instantiated by each backend's test binary.
#include "store/branch_store_contract.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"

namespace contextd::store::testing {
namespace {

using folding::Branch;
using folding::BranchStatus;
using folding::BranchUpdate;
using folding::BranchWrite;
using folding::ChargeRow;
using folding::SessionKey;

Branch MakeBranch(std::string id, SessionKey s, std::string parent = "", int depth = 1) {
  Branch b;
  b.id = std::move(id);
  b.session = std::move(s);
  b.parent_id = std::move(parent);
  b.depth = depth;
  b.description = "desc \xC3\xA9";
  b.prompt = "prompt with 'quotes' and \"double\"";
  b.status = BranchStatus::kActive;
  b.budget_allocated = 8192;
  b.tokens_used = 12;
  b.reserved_for_children = 0;
  b.deadline_wall_ms = 1'750'000'300'000;
  b.created_at_ms = 1'750'000'000'000;
  return b;
}

ChargeRow Charge(std::string id, std::string label, int64_t tokens) {
  ChargeRow c;
  c.branch_id = std::move(id);
  c.at_ms = 1'750'000'000'500;
  c.kind = "tool_result";
  c.label = std::move(label);
  c.excerpt = "excerpt of " + c.label;
  c.tokens = tokens;
  return c;
}

}  // namespace

void BranchStoreContractTest::SetUp() {
  backend_ = GetParam().make();
  std::string skip = backend_->SkipReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto s = backend_->OpenBranchStore();
  ASSERT_TRUE(s.ok()) << s.status();
  store_ = std::move(*s);
}

Branch BranchStoreContractTest::MustGet(const std::string& id) {
  auto b = store_->Get(id);
  EXPECT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b.ok() && b->has_value()) << id;
  return b.ok() && b->has_value() ? **b : Branch{};
}

namespace {

TEST_P(BranchStoreContractTest, InsertRoundTripsEveryField) {
  Branch b = MakeBranch("br_a", s1_);
  for (auto [ref, text, tokens] :
       {std::tuple<const char*, const char*, int64_t>{"mem_1", "use ripgrep", 3},
        {"mem_2", "tests live beside code", 4}}) {
    folding::InjectedContext c;
    c.kind = "memory";
    c.ref = ref;
    c.text = text;
    c.tokens = tokens;
    b.injected_context.push_back(c);
  }
  ASSERT_TRUE(store_->Commit(BranchWrite{{b}, {}, {}}).ok());
  Branch got = MustGet("br_a");
  EXPECT_EQ(got.id, b.id);
  EXPECT_EQ(got.session, b.session);
  EXPECT_EQ(got.parent_id, "");
  EXPECT_EQ(got.depth, 1);
  EXPECT_EQ(got.description, b.description);
  EXPECT_EQ(got.prompt, b.prompt);
  EXPECT_EQ(got.status, BranchStatus::kActive);
  EXPECT_EQ(got.budget_allocated, 8192);
  EXPECT_EQ(got.tokens_used, 12);
  EXPECT_EQ(got.deadline_wall_ms, b.deadline_wall_ms);
  EXPECT_EQ(got.created_at_ms, b.created_at_ms);
  EXPECT_EQ(got.finished_at_ms, 0);
  EXPECT_FALSE(got.memory_queued);
  ASSERT_EQ(got.injected_context.size(), 2u);
  EXPECT_EQ(got.injected_context[1].ref, "mem_2");
  EXPECT_EQ(got.injected_context[1].tokens, 4);
  auto missing = store_->Get("br_zzz");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_P(BranchStoreContractTest, UpdatesAndChargesInOneTransaction) {
  ASSERT_TRUE(store_->Commit(BranchWrite{{MakeBranch("br_p", s1_)}, {}, {}}).ok());
  Branch child = MakeBranch("br_c", s1_, "br_p", 2);
  BranchUpdate reserve{"br_p", BranchStatus::kActive, 12, 500, "", "", 0, false};
  ASSERT_TRUE(store_->Commit(BranchWrite{{child}, {reserve}, {Charge("br_c", "grep", 40)}}).ok());
  EXPECT_EQ(MustGet("br_p").reserved_for_children, 500);
  EXPECT_EQ(MustGet("br_c").parent_id, "br_p");
  BranchUpdate done{"br_c",     BranchStatus::kCompleted, 60,  0, "the summary",
                    "returned", 1'750'000'001'000,        true};
  ASSERT_TRUE(store_->Commit(BranchWrite{{}, {done}, {}}).ok());
  Branch got = MustGet("br_c");
  EXPECT_EQ(got.status, BranchStatus::kCompleted);
  EXPECT_EQ(got.tokens_used, 60);
  EXPECT_EQ(got.summary, "the summary");
  EXPECT_EQ(got.finish_reason, "returned");
  EXPECT_EQ(got.finished_at_ms, 1'750'000'001'000);
  EXPECT_TRUE(got.memory_queued);
}

TEST_P(BranchStoreContractTest, AFailingWriteAppliesNothing) {
  ASSERT_TRUE(store_->Commit(BranchWrite{{MakeBranch("br_a", s1_)}, {}, {}}).ok());
  // Insert + update of an unknown id: NotFound, and the insert is rolled back.
  BranchUpdate bad{"br_unknown", BranchStatus::kFailed, 0, 0, "", "", 1, false};
  absl::Status st =
      store_->Commit(BranchWrite{{MakeBranch("br_b", s1_)}, {bad}, {Charge("br_a", "x", 1)}});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  auto b = store_->Get("br_b");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());
  auto charges = store_->GetRecentCharges("br_a", 10);
  ASSERT_TRUE(charges.ok());
  EXPECT_EQ(charges->total, 0);
  // Duplicate id.
  st = store_->Commit(BranchWrite{{MakeBranch("br_a", s1_)}, {}, {}});
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists) << st;
  // Charge to a branch that does not exist (foreign key).
  st = store_->Commit(BranchWrite{{}, {}, {Charge("br_ghost", "x", 1)}});
  EXPECT_FALSE(st.ok());
  // The store is still usable after failures.
  EXPECT_TRUE(store_->Commit(BranchWrite{{MakeBranch("br_b", s1_)}, {}, {}}).ok());
}

TEST_P(BranchStoreContractTest, ListSessionIsScopedAndOrderedListLiveSpansSessions) {
  Branch a = MakeBranch("br_z1", s1_);
  Branch b = MakeBranch("br_a2", s2_);
  Branch c = MakeBranch("br_m3", s1_, "br_z1", 2);
  Branch other_tenant = MakeBranch("br_t4", SessionKey{"t2", "default", "s1"});
  ASSERT_TRUE(store_->Commit(BranchWrite{{a, b, c, other_tenant}, {}, {}}).ok());
  BranchUpdate done{"br_z1", BranchStatus::kCompleted, 1, 0, "s", "returned", 5, false};
  ASSERT_TRUE(store_->Commit(BranchWrite{{}, {done}, {}}).ok());
  auto s1 = store_->ListSession(s1_);
  ASSERT_TRUE(s1.ok());
  ASSERT_EQ(s1->size(), 2u);
  EXPECT_EQ((*s1)[0].id, "br_z1");  // creation order, not id order
  EXPECT_EQ((*s1)[1].id, "br_m3");
  auto live = store_->ListLive();
  ASSERT_TRUE(live.ok());
  std::vector<std::string> ids;
  for (auto& l : *live) ids.push_back(l.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"br_a2", "br_m3", "br_t4"}));
}

TEST_P(BranchStoreContractTest, RecentChargesAreTheLastNOldestFirst) {
  ASSERT_TRUE(store_->Commit(BranchWrite{{MakeBranch("br_a", s1_)}, {}, {}}).ok());
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(
        store_->Commit(BranchWrite{{}, {}, {Charge("br_a", absl::StrCat("t", i), i)}}).ok());
  }
  auto r = store_->GetRecentCharges("br_a", 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->total, 12);
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(r->rows[0].label, "t9");
  EXPECT_EQ(r->rows[2].label, "t11");
  EXPECT_EQ(r->rows[2].tokens, 11);
  EXPECT_EQ(r->rows[2].excerpt, "excerpt of t11");
}

TEST_P(BranchStoreContractTest, DataSurvivesReopen) {
  ASSERT_TRUE(
      store_->Commit(BranchWrite{{MakeBranch("br_a", s1_)}, {}, {Charge("br_a", "x", 3)}}).ok());
  store_.reset();
  auto again = backend_->OpenBranchStore();
  ASSERT_TRUE(again.ok());
  auto b = (*again)->Get("br_a");
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->tokens_used, 12);
  EXPECT_EQ((*again)->GetRecentCharges("br_a", 5)->total, 1);
}

// Two connections (two stores on one database), each written by its own threads at once: waits
// for locks resolve, every commit lands, and each connection sees the other's writes.
TEST_P(BranchStoreContractTest, ConcurrentWritersOnTwoConnections) {
  auto second = backend_->OpenBranchStore();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(store_->Commit(BranchWrite{{MakeBranch("br_shared", s1_)}, {}, {}}).ok());
  constexpr int kPerThread = 100;
  std::atomic<int> failures{0};
  auto writer = [&](folding::BranchStore* store, std::string prefix) {
    for (int i = 0; i < kPerThread; ++i) {
      std::string id = absl::StrCat(prefix, i);
      BranchWrite w;
      w.inserts.push_back(MakeBranch(id, s2_));
      w.charges.push_back(Charge("br_shared", id, 1));
      if (!store->Commit(w).ok()) ++failures;
      BranchUpdate u{id, BranchStatus::kCompleted, 20, 0, "done " + id, "returned", 9, false};
      if (!store->Commit(BranchWrite{{}, {u}, {}}).ok()) ++failures;
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(writer, store_.get(), "br_a");
  threads.emplace_back(writer, store_.get(), "br_b");
  threads.emplace_back(writer, second->get(), "br_c");
  threads.emplace_back(writer, second->get(), "br_d");
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (folding::BranchStore* s : {store_.get(), second->get()}) {
    auto all = s->ListSession(s2_);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->size(), 4u * kPerThread);
    for (const Branch& b : *all) {
      EXPECT_EQ(b.status, BranchStatus::kCompleted);
      EXPECT_EQ(b.summary, "done " + b.id);
    }
    auto charges = s->GetRecentCharges("br_shared", 1);
    ASSERT_TRUE(charges.ok());
    EXPECT_EQ(charges->total, 4 * kPerThread);
  }
}

}  // namespace
}  // namespace contextd::store::testing
