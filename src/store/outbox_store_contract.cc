// The contract of folding::OutboxStore (decision 0027), run against every backend (SQLite,
// PostgreSQL): rows written with a branch write commit with it, are listed in order, stay hidden
// once removed, are trimmed by age and count, and (a shared database) pass to another instance
// only once their lease ran out. Instantiated by each backend's test binary.
#include "store/outbox_store_contract.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace contextd::store::testing {
namespace {

using folding::OutboxEvent;

constexpr int64_t kNow = 1'750'000'000'000;

OutboxEvent Event(int n, int64_t created_ms = kNow, int64_t lease_ms = 15'000) {
  OutboxEvent e;
  e.id = absl::StrCat("ev_", n);
  e.type = "branch.created";
  e.subject = absl::StrCat("contextd.local.default.s1.branch.created");
  e.payload = absl::StrCat("{\"n\":", n, ",\"text\":\"caf\xC3\xA9 'q'\"}");
  e.created_ms = created_ms;
  e.lease_until_ms = created_ms + lease_ms;
  return e;
}

folding::Branch MakeBranch(std::string id) {
  folding::Branch b;
  b.id = std::move(id);
  b.session = folding::SessionKey{"local", "default", "s1"};
  b.status = folding::BranchStatus::kActive;
  b.budget_allocated = 8192;
  b.deadline_wall_ms = kNow + 300'000;
  b.created_at_ms = kNow;
  return b;
}

std::vector<std::string> Ids(const std::vector<folding::OutboxRow>& rows) {
  std::vector<std::string> out;
  for (const folding::OutboxRow& r : rows) out.push_back(r.event.id);
  return out;
}

std::vector<int64_t> Seqs(const std::vector<folding::OutboxRow>& rows) {
  std::vector<int64_t> out;
  for (const folding::OutboxRow& r : rows) out.push_back(r.seq);
  return out;
}

}  // namespace

void OutboxStoreContractTest::SetUp() {
  backend_ = GetParam().make();
  std::string skip = backend_->SkipReason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto b = backend_->OpenBranchStore();
  ASSERT_TRUE(b.ok()) << b.status();
  branches_ = std::move(*b);
  auto o = backend_->OpenOutboxStore(*branches_);
  ASSERT_TRUE(o.ok()) << o.status();
  outbox_ = std::move(*o);
}

std::vector<folding::OutboxRow> OutboxStoreContractTest::List(folding::OutboxStore& store,
                                                              int64_t after, int limit) {
  auto rows = store.ListOwn(after, limit);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<folding::OutboxRow>{};
}

TEST_P(OutboxStoreContractTest, EventsCommitWithTheirBranchWrite) {
  folding::BranchWrite w;
  w.inserts.push_back(MakeBranch("br_1"));
  w.events = {Event(1), Event(2)};
  ASSERT_TRUE(branches_->Commit(w).ok());
  std::vector<folding::OutboxRow> rows = List(*outbox_);
  ASSERT_EQ(Ids(rows), (std::vector<std::string>{"ev_1", "ev_2"}));
  EXPECT_LT(rows[0].seq, rows[1].seq);
  EXPECT_EQ(rows[1].event.type, "branch.created");
  EXPECT_EQ(rows[1].event.subject, "contextd.local.default.s1.branch.created");
  EXPECT_EQ(rows[1].event.payload, Event(2).payload);
  EXPECT_EQ(rows[1].event.created_ms, kNow);

  // A write that fails (duplicate branch id) leaves none of its events.
  folding::BranchWrite dup;
  dup.inserts.push_back(MakeBranch("br_1"));
  dup.events = {Event(3)};
  EXPECT_FALSE(branches_->Commit(dup).ok());
  EXPECT_EQ(Ids(List(*outbox_)), (std::vector<std::string>{"ev_1", "ev_2"}));
}

TEST_P(OutboxStoreContractTest, ListsInOrderAfterACursorAndHidesRemovedRows) {
  ASSERT_TRUE(outbox_->Append({Event(1), Event(2), Event(3)}).ok());
  std::vector<folding::OutboxRow> first = List(*outbox_, 0, 2);
  ASSERT_EQ(Ids(first), (std::vector<std::string>{"ev_1", "ev_2"}));
  EXPECT_EQ(Ids(List(*outbox_, first.back().seq)), (std::vector<std::string>{"ev_3"}));
  ASSERT_TRUE(outbox_->Remove(Seqs(first)).ok());
  EXPECT_EQ(Ids(List(*outbox_)), (std::vector<std::string>{"ev_3"}));
  // Seqs are never reused, even once the table is empty.
  int64_t last = List(*outbox_).back().seq;
  ASSERT_TRUE(outbox_->Remove({last}).ok());
  EXPECT_TRUE(List(*outbox_).empty());
  ASSERT_TRUE(outbox_->Append({Event(4)}).ok());
  std::vector<folding::OutboxRow> after = List(*outbox_, last);
  ASSERT_EQ(Ids(after), (std::vector<std::string>{"ev_4"}));
  EXPECT_GT(after[0].seq, last);
}

TEST_P(OutboxStoreContractTest, StatsAndTrimByAgeAndCount) {
  auto empty = outbox_->Stats();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->rows, 0);
  EXPECT_EQ(empty->oldest_created_ms, 0);
  ASSERT_TRUE(outbox_
                  ->Append({Event(1, kNow - 5'000), Event(2, kNow - 4'000), Event(3, kNow),
                            Event(4, kNow), Event(5, kNow)})
                  .ok());
  auto stats = outbox_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->rows, 5);
  EXPECT_EQ(stats->oldest_created_ms, kNow - 5'000);
  auto trimmed = outbox_->Trim(kNow - 4'500, 1'000);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_EQ(*trimmed, 1);
  trimmed = outbox_->Trim(0, 2);  // the oldest beyond 2 rows go
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_EQ(*trimmed, 2);
  EXPECT_EQ(Ids(List(*outbox_)), (std::vector<std::string>{"ev_4", "ev_5"}));
  trimmed = outbox_->Trim(0, 2);
  ASSERT_TRUE(trimmed.ok());
  EXPECT_EQ(*trimmed, 0);
}

TEST_P(OutboxStoreContractTest, AnotherInstanceTakesOverOnlyExpiredRows) {
  auto other_branches = backend_->OpenBranchStore();
  ASSERT_TRUE(other_branches.ok());
  auto other = backend_->OpenOutboxStore(**other_branches);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(outbox_->Append({Event(1, kNow, 1'000), Event(2, kNow, 1'000)}).ok());
  if (outbox_->owner().empty()) {
    // One process writes a SQLite file: every row is whoever opens it next (a restart's).
    EXPECT_EQ(Ids(List(**other)), (std::vector<std::string>{"ev_1", "ev_2"}));
    auto taken = (*other)->TakeOver(kNow + 10'000, 1'000, 100);
    ASSERT_TRUE(taken.ok());
    EXPECT_EQ(*taken, 0);
    return;
  }
  EXPECT_NE(outbox_->owner(), (*other)->owner());
  EXPECT_TRUE(List(**other).empty());
  // Within the lease: not taken.
  auto taken = (*other)->TakeOver(kNow + 500, 1'000, 100);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(*taken, 0);
  // The owner, alive, renews leases about to run out: still not taken at kNow + 1'200.
  ASSERT_TRUE(outbox_->TakeOver(kNow + 600, 1'000, 100).ok());
  taken = (*other)->TakeOver(kNow + 1'200, 1'000, 100);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 0);
  // The owner stopped renewing (killed): the rows pass to the other, in order, once.
  taken = (*other)->TakeOver(kNow + 1'700, 1'000, 1);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 1);
  taken = (*other)->TakeOver(kNow + 1'700, 1'000, 100);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 1);
  EXPECT_EQ(Ids(List(**other)), (std::vector<std::string>{"ev_1", "ev_2"}));
  EXPECT_TRUE(List(*outbox_).empty());
  taken = outbox_->TakeOver(kNow + 1'800, 1'000, 100);  // the other's lease holds now
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 0);
}

}  // namespace contextd::store::testing
