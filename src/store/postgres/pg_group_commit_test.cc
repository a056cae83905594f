// PgDatabase's group commit (decision 0026) against a real PostgreSQL: the grouped writes of one
// thread commit together and are invisible to other connections until then, a failed write or
// read undoes only itself, a failed COMMIT loses the whole group and nothing committed before it,
// other threads' writes commit on their own, and deadline claims keep working between instances
// while a group holds rows.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "folding/testing/fakes.h"
#include "store/postgres/pg_branch_store.h"
#include "store/postgres/pg_database.h"
#include "store/testing/pg_backend.h"

namespace contextd::store {
namespace {

using testing::PgBackend;

class PgGroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CONTEXTD_REQUIRE_PG_OR_SKIP();
    backend_ = std::make_unique<PgBackend>();
    auto db = PgDatabase::Open(backend_->options(3));
    auto other = PgDatabase::Open(backend_->options(2));
    ASSERT_TRUE(db.ok() && other.ok());
    db_ = std::move(*db);
    other_ = std::move(*other);
    ASSERT_TRUE(db_->Write([](PgConn& c) {
                     return c.ExecScript(
                         "CREATE TABLE gc_t (id INTEGER PRIMARY KEY);"
                         "CREATE TABLE gc_parent (id INTEGER PRIMARY KEY);"
                         "CREATE TABLE gc_child (id INTEGER PRIMARY KEY, parent INTEGER "
                         "REFERENCES gc_parent DEFERRABLE INITIALLY DEFERRED)");
                   })
                    .ok());
    // Grouped on this thread; the "flush" is the test's own CommitGroup call.
    db_->EnableGroupCommit(std::this_thread::get_id(), [this] { ++groups_opened_; });
  }

  absl::Status Insert(PgDatabase& db, int id) {
    return db.Write(
        [id](PgConn& c) { return c.Exec("INSERT INTO gc_t (id) VALUES ($1)", {id}).status(); });
  }
  // The ids `db` sees (from this thread: inside the open group, if `db` has one).
  std::vector<int64_t> Rows(PgDatabase& db) {
    std::vector<int64_t> ids;
    absl::Status st = db.Read([&](PgConn& c) -> absl::Status {
      ids.clear();
      auto r = c.Exec("SELECT id FROM gc_t ORDER BY id");
      if (!r.ok()) return r.status();
      for (int i = 0; i < r->rows(); ++i) ids.push_back(r->Int(i, 0));
      return absl::OkStatus();
    });
    EXPECT_TRUE(st.ok()) << st;
    return ids;
  }

  std::unique_ptr<PgBackend> backend_;
  std::unique_ptr<PgDatabase> db_;     // the grouping instance
  std::unique_ptr<PgDatabase> other_;  // another instance (its own pool)
  int groups_opened_ = 0;
};

using Ids = std::vector<int64_t>;

TEST_F(PgGroupCommitTest, GroupedWritesCommitTogetherAndReadTheirOwnWrites) {
  EXPECT_FALSE(db_->group_open());
  ASSERT_TRUE(Insert(*db_, 1).ok());
  ASSERT_TRUE(Insert(*db_, 2).ok());
  EXPECT_EQ(groups_opened_, 1);
  EXPECT_TRUE(db_->group_open());
  EXPECT_EQ(Rows(*db_), (Ids{1, 2}));  // the group sees its writes
  EXPECT_EQ(Rows(*other_), Ids{});     // nobody else does before the commit
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_FALSE(db_->group_open());
  EXPECT_EQ(Rows(*other_), (Ids{1, 2}));
  EXPECT_TRUE(db_->CommitGroup().ok());  // nothing open: nothing to do
  ASSERT_TRUE(Insert(*db_, 3).ok());
  EXPECT_EQ(groups_opened_, 2);
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), (Ids{1, 2, 3}));
}

TEST_F(PgGroupCommitTest, AFailedWriteOrReadUndoesOnlyItself) {
  ASSERT_TRUE(Insert(*db_, 1).ok());
  // A write whose second statement fails: its first is undone, the group goes on.
  absl::Status dup = db_->Write([](PgConn& c) -> absl::Status {
    auto r = c.Exec("INSERT INTO gc_t (id) VALUES ($1)", {2});
    if (!r.ok()) return r.status();
    return c.Exec("INSERT INTO gc_t (id) VALUES ($1)", {1}).status();
  });
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
  // A write whose body refuses without a statement error is undone too.
  absl::Status refused = db_->Write([](PgConn& c) -> absl::Status {
    auto r = c.Exec("INSERT INTO gc_t (id) VALUES ($1)", {4});
    if (!r.ok()) return r.status();
    return absl::NotFoundError("no such branch");
  });
  EXPECT_EQ(refused.code(), absl::StatusCode::kNotFound);
  // A failing read (the transaction is aborted by it) leaves the group as it was.
  absl::Status bad_read =
      db_->Read([](PgConn& c) { return c.Exec("SELECT * FROM no_such_table").status(); });
  EXPECT_FALSE(bad_read.ok());
  ASSERT_TRUE(Insert(*db_, 3).ok());
  EXPECT_EQ(groups_opened_, 1);
  EXPECT_EQ(Rows(*db_), (Ids{1, 3}));
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), (Ids{1, 3}));
}

TEST_F(PgGroupCommitTest, AFailedCommitLosesTheGroupAndNothingCommittedBefore) {
  ASSERT_TRUE(Insert(*db_, 10).ok());
  ASSERT_TRUE(db_->CommitGroup().ok());  // acknowledged
  ASSERT_TRUE(Insert(*db_, 11).ok());
  // Applied in the group (the foreign key is checked at COMMIT only), so the write says OK...
  ASSERT_TRUE(db_->Write([](PgConn& c) {
                   return c.Exec("INSERT INTO gc_child (id, parent) VALUES (1, 99)").status();
                 })
                  .ok());
  ASSERT_TRUE(Insert(*db_, 12).ok());
  // ...and the commit fails for the whole group: every writer of it hears the error.
  absl::Status committed = db_->CommitGroup();
  EXPECT_EQ(committed.code(), absl::StatusCode::kFailedPrecondition) << committed;
  EXPECT_FALSE(db_->group_open());
  EXPECT_EQ(Rows(*other_), Ids{10});
  EXPECT_EQ(Rows(*db_), Ids{10});
  // The next group starts clean on a good connection.
  ASSERT_TRUE(Insert(*db_, 13).ok());
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), (Ids{10, 13}));
}

TEST_F(PgGroupCommitTest, ABrokenGroupIsReportedOnceAndTakesLaterWritesWithIt) {
  ASSERT_TRUE(Insert(*db_, 1).ok());
  // The group's connection is killed from the outside (a server restart, a network cut).
  ASSERT_TRUE(other_
                  ->Write([](PgConn& c) {
                    return c
                        .Exec(
                            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> "
                            "pg_backend_pid() AND state = 'idle in transaction'")
                        .status();
                  })
                  .ok());
  EXPECT_EQ(Insert(*db_, 2).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(db_->group_open());
  // A write after the failure opens a new group; it is lost with the broken one, so that
  // everyone waiting on this commit hears the same answer.
  ASSERT_TRUE(Insert(*db_, 3).ok());
  EXPECT_EQ(groups_opened_, 2);
  EXPECT_EQ(db_->CommitGroup().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(db_->CommitGroup().ok());  // reported once
  EXPECT_EQ(Rows(*other_), Ids{});
}

// A write's end (release the savepoint, set it again) is sent without waiting for its answer; a
// body that swallowed a statement's error left the transaction aborted, so that end fails, and
// with it the group, at the next statement or at the commit: never a partial commit.
TEST_F(PgGroupCommitTest, ABodyThatSwallowsAnErrorFailsTheGroup) {
  ASSERT_TRUE(Insert(*db_, 1).ok());
  EXPECT_TRUE(db_->Write([](PgConn& c) {
                   (void)c.Exec("SELECT * FROM no_such_table");
                   return absl::OkStatus();
                 })
                  .ok());
  EXPECT_FALSE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), Ids{});
  // The same, found by the next write instead of the commit.
  ASSERT_TRUE(db_->Write([](PgConn& c) {
                   (void)c.Exec("SELECT * FROM no_such_table");
                   return absl::OkStatus();
                 })
                  .ok());
  EXPECT_FALSE(Insert(*db_, 2).ok());
  EXPECT_FALSE(db_->group_open());
  EXPECT_FALSE(db_->CommitGroup().ok());
  ASSERT_TRUE(Insert(*db_, 3).ok());
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), Ids{3});
}

TEST_F(PgGroupCommitTest, WritesOfOtherThreadsCommitOnTheirOwn) {
  ASSERT_TRUE(Insert(*db_, 1).ok());
  std::thread worker([this] {
    EXPECT_TRUE(Insert(*db_, 2).ok());
    // Durable when it returns, whatever the group thread's group is doing.
    EXPECT_EQ(Rows(*other_), Ids{2});
    EXPECT_EQ(Rows(*db_), Ids{2});  // outside the group: the committed rows
  });
  worker.join();
  EXPECT_EQ(groups_opened_, 1);
  EXPECT_EQ(Rows(*db_), (Ids{1, 2}));
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Rows(*other_), (Ids{1, 2}));
}

// While one instance's group holds a branch (its claim, its update), another instance's claim
// skips it instead of waiting; once committed, the lease decides as before.
TEST_F(PgGroupCommitTest, ClaimsOfAnotherInstanceSkipWhatAnOpenGroupHolds) {
  std::shared_ptr<PgDatabase> grouped_db(std::move(db_));
  auto grouped = PgBranchStore::Create(grouped_db);
  std::shared_ptr<PgDatabase> other(std::move(other_));
  auto plain = PgBranchStore::Create(other);
  folding::BranchWrite w;
  for (const char* id : {"br_a", "br_b"}) {
    folding::Branch br;
    br.id = id;
    br.session = {"local", "default", "s"};
    br.description = "d";
    br.prompt = "p";
    br.deadline_wall_ms = 1000;
    w.inserts.push_back(br);
  }
  ASSERT_TRUE(plain->Commit(w).ok());
  PgDatabase& db = *grouped_db;
  auto claim = grouped->ClaimDeadline("br_a", 5000, 30000);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(*claim, folding::DeadlineClaim::kClaimed);
  folding::BranchUpdate touched{"br_b", folding::BranchStatus::kActive, 5, 0, "", "", 0, false};
  ASSERT_TRUE(grouped->Commit(folding::BranchWrite{{}, {touched}, {}}).ok());
  EXPECT_TRUE(db.group_open());
  // Both rows are locked by the open group: the other instance skips them, it does not wait.
  EXPECT_EQ(*plain->ClaimDeadline("br_a", 5000, 30000), folding::DeadlineClaim::kHeldElsewhere);
  EXPECT_EQ(*plain->ClaimDeadline("br_b", 5000, 30000), folding::DeadlineClaim::kHeldElsewhere);
  ASSERT_TRUE(db.CommitGroup().ok());
  // Committed: br_a's lease is the grouped instance's, br_b is free.
  EXPECT_EQ(*plain->ClaimDeadline("br_a", 6000, 30000), folding::DeadlineClaim::kHeldElsewhere);
  EXPECT_EQ(*plain->ClaimDeadline("br_b", 6000, 30000), folding::DeadlineClaim::kClaimed);
  auto b = plain->Get("br_b");
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->tokens_used, 5);
  // After the lease the other instance takes br_a over (the grouped one died).
  EXPECT_EQ(*plain->ClaimDeadline("br_a", 40000, 30000), folding::DeadlineClaim::kClaimed);
}

// pg_store_test's TwoEnginesTimeOutASharedBranchOnce with both engines group-committing, as
// contextd serve runs them: each executor's writes share a transaction flushed behind its batch.
TEST_F(PgGroupCommitTest, TwoGroupCommittingEnginesTimeOutASharedBranchOnce) {
  std::shared_ptr<PgDatabase> db_a(std::move(db_));
  std::shared_ptr<PgDatabase> db_b(std::move(other_));
  auto store_a = PgBranchStore::Create(db_a);
  auto store_b = PgBranchStore::Create(db_b);
  base::FakeClock clock;
  base::ManualExecutor exec_a(clock), exec_b(clock);
  // ManualExecutors run on this thread: both databases group this thread's writes.
  int flushes = 0;
  auto group = [&](PgDatabase& db, base::ManualExecutor& exec) {
    db.EnableGroupCommit(std::this_thread::get_id(), [&db, &exec, &flushes] {
      exec.Post([&db, &flushes] {
        ++flushes;
        EXPECT_TRUE(db.CommitGroup().ok());
      });
    });
  };
  group(*db_a, exec_a);  // instead of SetUp's callback
  group(*db_b, exec_b);
  folding::testing::WordTokenCounter counter;
  folding::testing::FakeScrubber scrubber;
  folding::EventBus bus_a, bus_b;
  int force_returned = 0;
  auto count = [&](const folding::BranchEvent& e) {
    force_returned += e.type == folding::BranchEventType::kForceReturned;
  };
  bus_a.Subscribe(count);
  bus_b.Subscribe(count);
  folding::BranchManager a({}, exec_a, *store_a, counter, scrubber, &bus_a);
  folding::BranchManager b({}, exec_b, *store_b, counter, scrubber, &bus_b);
  folding::SessionKey s{"local", "default", "shared"};
  std::string id;
  exec_a.Post([&] {
    folding::CreateRequest r;
    r.description = "explore";
    r.prompt = "look around";
    r.timeout_seconds = 60;
    auto created = a.Create(s, r);
    ASSERT_TRUE(created.ok()) << created.status();
    id = created->branch_id;
    EXPECT_TRUE(db_a->group_open());  // not committed before the flush behind this task
  });
  exec_a.RunUntilIdle();
  ASSERT_FALSE(id.empty());
  EXPECT_FALSE(db_a->group_open());
  exec_b.Post([&] { ASSERT_TRUE(b.LoadSession(s).ok()); });
  exec_b.RunUntilIdle();
  EXPECT_EQ(b.active_branches(), 1);
  clock.Advance(std::chrono::seconds(61));
  exec_b.RunUntilIdle();  // b claims and force-returns, in one group
  exec_a.RunUntilIdle();  // a's claim finds it ended and reloads
  EXPECT_EQ(force_returned, 1);
  EXPECT_EQ(a.active_branches(), 0);
  EXPECT_EQ(b.active_branches(), 0);
  EXPECT_GE(flushes, 3);
  auto stored = store_a->Get(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->status, folding::BranchStatus::kTimeout);
}

}  // namespace
}  // namespace contextd::store
