// Randomised operation sequences against the engine (seeded, deterministic): after every step the
// budget and tree invariants hold and the store agrees with what the engine reports.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/testing/fakes.h"

namespace contextd::folding {
namespace {

class RandomOpsTest : public ::testing::TestWithParam<int> {
 protected:
  RandomOpsTest() : exec_(clock_) {}

  template <typename F>
  auto Run(F f) -> decltype(f()) {
    std::optional<decltype(f())> out;
    exec_.Post([&] { out.emplace(f()); });
    exec_.RunUntilIdle();
    return std::move(*out);
  }

  // Checks one subtree; returns the sum of budgets of its live top-level nodes (for the parent).
  void CheckView(const BranchView& v, const SessionKey& s, bool parent_live, int* live_count) {
    auto stored = store_.Get(v.branch_id);
    ASSERT_TRUE(stored.ok() && stored->has_value());
    const Branch& b = **stored;
    EXPECT_EQ(b.session, s);
    EXPECT_EQ(b.status, v.status);
    EXPECT_EQ(b.tokens_used, v.tokens_used);
    EXPECT_EQ(b.reserved_for_children, v.reserved_for_children);
    EXPECT_LT(v.depth, config_.max_depth);
    int64_t live_children_budget = 0;
    for (const BranchView& c : v.children) {
      EXPECT_EQ(c.depth, v.depth + 1);
      EXPECT_EQ(c.parent_branch_id, v.branch_id);
      if (IsLive(c.status)) live_children_budget += c.budget_allocated;
      CheckView(c, s, IsLive(v.status), live_count);
    }
    if (IsLive(v.status)) {
      ++*live_count;
      EXPECT_TRUE(parent_live) << "live branch under an ended parent";
      EXPECT_EQ(v.reserved_for_children, live_children_budget);
      EXPECT_LE(v.tokens_used + v.reserved_for_children, v.budget_allocated);
    } else {
      EXPECT_EQ(v.reserved_for_children, 0);
      EXPECT_FALSE(v.finish_reason.empty());
    }
  }

  base::FakeClock clock_;
  base::ManualExecutor exec_;
  testing::InMemoryBranchStore store_;
  testing::WordTokenCounter counter_;
  testing::FakeScrubber scrubber_;
  FoldingConfig config_;
};

TEST_P(RandomOpsTest, InvariantsHoldAfterEveryStep) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  config_.branch_creation_rate_limit = "20/minute";
  config_.max_concurrent_branches_per_session = 6;
  config_.max_concurrent_branches_per_instance = 12;
  auto mgr = std::make_unique<BranchManager>(config_, exec_, store_, counter_, scrubber_, nullptr);
  std::vector<SessionKey> sessions = {
      {"local", "default", "a"}, {"local", "default", "b"}, {"t2", "default", "a"}};
  std::vector<std::string> ids;
  int created = 0, exhausted = 0, returned = 0;
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto words = [&](int n) {
    return std::string(static_cast<size_t>(n) * 2, ' ').replace(0, 1, "w");
  };
  for (int step = 0; step < 400; ++step) {
    const SessionKey& s = sessions[pick(3)];
    int op = pick(10);
    if (op < 3) {
      CreateRequest r;
      r.description = "d";
      r.prompt = "p q";
      if (pick(2)) r.budget = 1 + pick(3000);
      if (pick(3) == 0) r.timeout_seconds = 1 + pick(60);
      if (!ids.empty() && pick(4) == 0)
        r.parent_branch_id = ids[pick(static_cast<int>(ids.size()))];
      auto c = Run([&] { return mgr->Create(s, r); });
      if (c.ok()) ids.push_back(c->branch_id);
      created += c.ok();
    } else if (op < 7) {
      ChargeRecord rec;
      rec.kind = "tool_result";
      rec.label = "t";
      rec.tokens = pick(5) == 0 ? pick(4000) : pick(400);
      std::string id =
          (!ids.empty() && pick(3) == 0) ? ids[pick(static_cast<int>(ids.size()))] : "";
      auto o = Run([&] { return mgr->Charge(s, id, rec); });
      exhausted += o.ok() && o->exhausted;
    } else if (op < 9) {
      ReturnRequest r;
      r.message = words(pick(5));
      if (!ids.empty() && pick(3) == 0) r.branch_id = ids[pick(static_cast<int>(ids.size()))];
      returned += Run([&] { return mgr->Return(s, r).ok(); });
    } else if (pick(4) == 0) {
      Run([&] { return mgr->EndSession(s, "random").status(); }).IgnoreError();
    } else if (pick(3) == 0) {
      // Restart: drop the engine and recover from the store.
      mgr.reset();
      mgr = std::make_unique<BranchManager>(config_, exec_, store_, counter_, scrubber_, nullptr);
      ASSERT_TRUE(Run([&] { return mgr->Recover().status(); }).ok());
    } else {
      exec_.AdvanceAndRun(std::chrono::seconds(1 + pick(20)));
    }
    int live = 0;
    for (const SessionKey& k : sessions) {
      auto st = Run([&] { return mgr->Status(k, ""); });
      ASSERT_TRUE(st.ok());
      int session_live = 0;
      for (const BranchView& v : st->branches) {
        EXPECT_EQ(v.depth, 0);
        CheckView(v, k, true, &session_live);
      }
      EXPECT_EQ(session_live, st->active_count);
      EXPECT_LE(session_live, config_.max_concurrent_branches_per_session);
      live += session_live;
    }
    EXPECT_EQ(live, mgr->active_branches());
    auto stored_live = store_.ListLive();
    ASSERT_TRUE(stored_live.ok());
    EXPECT_EQ(static_cast<int>(stored_live->size()), live);
    if (HasFailure()) {
      ADD_FAILURE() << "seed " << GetParam() << " step " << step;
      return;
    }
  }
  // The sequence must exercise the engine, not just its error paths.
  EXPECT_GE(created, 30);
  EXPECT_GE(returned, 10);
  EXPECT_GE(exhausted, 1);
  Run([&] {
    mgr.reset();
    return 0;
  });
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomOpsTest, ::testing::Range(1, 9));

}  // namespace
}  // namespace contextd::folding
