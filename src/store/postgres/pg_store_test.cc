// The PostgreSQL stores against the shared contracts (BranchStore, ConversationStore), and what
// only PostgreSQL promises: the pool, migrations under an advisory lock, reads that survive a
// lost connection, and the deadline sweep that hands each due branch to exactly one instance.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "folding/testing/fakes.h"
#include "store/branch_store_contract.h"
#include "store/conversation_store_contract.h"
#include "store/mcp_session_store_contract.h"
#include "store/memory_store_contract.h"
#include "store/outbox_store_contract.h"
#include "store/postgres/pg_branch_store.h"
#include "store/postgres/pg_conversation_store.h"
#include "store/postgres/pg_database.h"
#include "store/postgres/pg_migrations.h"
#include "store/postgres/pg_retention_store.h"
#include "store/postgres/pg_trail_store.h"
#include "store/retention_store_contract.h"
#include "store/testing/pg_backend.h"
#include "store/trail_store_contract.h"

namespace contextd::store {
namespace {

using testing::BranchStoreContractTest;
using testing::McpSessionStoreContractTest;
using testing::MemoryBankTest;
using testing::OutboxStoreContractTest;
using testing::PgBackend;
using testing::RetentionStoreContractTest;
using testing::TrailStoreContractTest;

INSTANTIATE_TEST_SUITE_P(Postgres, BranchStoreContractTest, ::testing::Values(testing::PgFactory()),
                         testing::BackendName);

INSTANTIATE_TEST_SUITE_P(Postgres, OutboxStoreContractTest, ::testing::Values(testing::PgFactory()),
                         testing::BackendName);

INSTANTIATE_TEST_SUITE_P(Postgres, MemoryBankTest, ::testing::Values(testing::PgFactory()),
                         testing::BackendName);

INSTANTIATE_TEST_SUITE_P(Postgres, McpSessionStoreContractTest,
                         ::testing::Values(testing::PgFactory()), testing::BackendName);

INSTANTIATE_TEST_SUITE_P(Postgres, RetentionStoreContractTest,
                         ::testing::Values(testing::PgFactory()), testing::BackendName);
INSTANTIATE_TEST_SUITE_P(Postgres, TrailStoreContractTest, ::testing::Values(testing::PgFactory()),
                         testing::BackendName);

INSTANTIATE_TEST_SUITE_P(
    Postgres, ConversationStoreContractTest,
    ::testing::Values(Impl{"Postgres",
                           [](const TempDir&) -> std::unique_ptr<ConversationStore> {
                             PgBackend backend;
                             if (!backend.SkipReason().empty()) return nullptr;
                             auto s = backend.OpenConversationStore();
                             EXPECT_TRUE(s.ok()) << s.status();
                             return s.ok() ? std::move(*s) : nullptr;
                           }}),
    [](const ::testing::TestParamInfo<Impl>& param) { return param.param.name; });

class PgDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CONTEXTD_REQUIRE_PG_OR_SKIP();
    backend_ = std::make_unique<PgBackend>();
  }
  std::unique_ptr<PgBackend> backend_;
};

TEST(RedactConninfoTest, HidesPasswordsInUrlsAndKeywords) {
  EXPECT_EQ(RedactConninfo("postgresql://ctx:s3cr%40t@db:5432/contextd?sslmode=require"),
            "postgresql://ctx:****@db:5432/contextd?sslmode=require");
  EXPECT_EQ(RedactConninfo("host=db user=ctx password=hunter2 dbname=c"),
            "host=db user=ctx password=**** dbname=c");
  EXPECT_EQ(RedactConninfo("host=db password = 'a b\\'c' dbname=c"),
            "host=db password = **** dbname=c");
  EXPECT_EQ(RedactConninfo("postgresql://db/c?password=x&sslmode=disable"),
            "postgresql://db/c?password=****&sslmode=disable");
  EXPECT_EQ(RedactConninfo("postgresql://ctx@db/c"), "postgresql://ctx@db/c");
}

TEST(PgTsQueryTest, QuotesEveryPartAndNeverPassesSyntax) {
  auto q = PgTsQuery("Foo \"bar\" src/lex.c baz* a&b:*|!c");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, "'foo' | 'bar' | ('src' <-> 'lex' <-> 'c') | 'baz':* | ('a' <-> 'b' <-> 'c')");
  EXPECT_EQ(PgTsQuery(" () ").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PgTsQuery(std::string(1001, 'a')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PgDatabaseTest, IdenticalPayloadsShareOneBlobAndBytesRoundTrip) {
  auto store = PgTrailStore::Open(backend_->options());
  ASSERT_TRUE(store.ok()) << store.status();
  trail::SessionRef s;
  s.session_id = "a";
  ASSERT_TRUE((*store)->OpenScope(testing::MakeScope("ses_1", "", "session", s)).ok());
  std::string big(100000, 'x');
  constexpr char kOdd[] = "nul\0 and \xff bytes";
  std::string odd(kOdd, sizeof kOdd - 1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*store)
                    ->AppendEvents({trail::NewEvent{"ses_1", trail::EventKind::kToolResult, "t",
                                                    big, 1, false, i}})
                    .ok());
  }
  auto seq = (*store)->AppendEvents(
      {trail::NewEvent{"ses_1", trail::EventKind::kToolResult, "t", odd, 1, false, 9}});
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(*(*store)->BlobCount(), 2);
  auto e = (*store)->GetEvent(seq->front());
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->payload, odd);
}

TEST_F(PgDatabaseTest, InstancesStartingAtOnceMigrateOnce) {
  constexpr int kInstances = 6;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kInstances; ++i) {
    threads.emplace_back([&] {
      auto db = PgDatabase::Open(backend_->options(1));
      if (!db.ok()) {
        ADD_FAILURE() << db.status();
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto db = PgDatabase::Open(backend_->options(1));
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(*(*db)->SchemaVersion(), PgMigrations().back().version);
  int rows = -1;
  ASSERT_TRUE((*db)
                  ->Read([&](PgConn& c) -> absl::Status {
                    auto r = c.Exec("SELECT COUNT(*) FROM schema_version");
                    if (!r.ok()) return r.status();
                    rows = static_cast<int>(r->Int(0, 0));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(rows, static_cast<int>(PgMigrations().size()));
}

TEST_F(PgDatabaseTest, ANewerSchemaIsRefusedAndAnOlderOneWithoutMigrateToo) {
  auto db = PgDatabase::Open(backend_->options(1));
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)
                  ->Write([](PgConn& c) {
                    return c.Exec("INSERT INTO schema_version VALUES (999, 'future', 0)").status();
                  })
                  .ok());
  auto newer = PgDatabase::Open(backend_->options(1));
  EXPECT_EQ(newer.status().code(), absl::StatusCode::kFailedPrecondition) << newer.status();
  EXPECT_NE(newer.status().message().find("newer than this contextd"), std::string::npos);

  PgBackend fresh;
  PgOptions no_migrate = fresh.options(1);
  no_migrate.migrate = false;
  auto older = PgDatabase::Open(no_migrate);
  EXPECT_EQ(older.status().code(), absl::StatusCode::kFailedPrecondition) << older.status();
  EXPECT_NE(older.status().message().find("contextd migrate"), std::string::npos);
}

// Migration 4 on a database whose sessions already have several roots (one per instance that
// served them, as before it): it does not fail, and the oldest root becomes the session's.
TEST_F(PgDatabaseTest, Migration4MakesTheOldestOfASessionsRootsItsRoot) {
  {
    auto db = PgDatabase::Open(backend_->options(1));
    ASSERT_TRUE(db.ok()) << db.status();
    // Back to version 3, with the rows an older contextd wrote.
    ASSERT_TRUE((*db)
                    ->Write([](PgConn& c) {
                      return c.ExecScript(
                          "ALTER TABLE trail_scopes DROP COLUMN session_root; "
                          "DROP TABLE model_usage_daily; DROP INDEX trail_scopes_by_parent; "
                          "ALTER TABLE model_usage DROP COLUMN folds_new, "
                          "DROP COLUMN folds_skipped, DROP COLUMN branch_view, "
                          "DROP COLUMN view_tokens_spared; "
                          "DROP TABLE memory_stems, memory_project_terms, memory_corpus; "
                          "ALTER TABLE memories ADD COLUMN content_search TSVECTOR, "
                          "ADD COLUMN task_search TSVECTOR; "
                          "DELETE FROM schema_version WHERE version >= 4; "
                          "INSERT INTO trail_scopes (id, tenant, project, session_id, kind, "
                          "root_id, description, status, created_at_ms) VALUES "
                          "('ses_old', 'acme', 'default', 'mcp-1', 'session', 'ses_old', 's', "
                          "'open', 1), "
                          "('ses_new', 'acme', 'default', 'mcp-1', 'session', 'ses_new', 's', "
                          "'open', 2), "
                          "('ses_b', 'globex', 'default', 'mcp-1', 'session', 'ses_b', 's', "
                          "'open', 3)");
                    })
                    .ok());
  }
  auto store = PgTrailStore::Open(backend_->options(1));
  ASSERT_TRUE(store.ok()) << store.status();
  trail::Scope candidate;
  candidate.id = "ses_x";
  candidate.kind = trail::ScopeKind::kSession;
  candidate.session = {"acme", "default", "mcp-1"};
  EXPECT_EQ(*(*store)->OpenSessionRoot(candidate), "ses_old");
  candidate.session.tenant = "globex";
  EXPECT_EQ(*(*store)->OpenSessionRoot(candidate), "ses_b");
  auto sessions = (*store)->ListSessions("", 10);
  ASSERT_TRUE(sessions.ok());
  EXPECT_EQ(sessions->size(), 3u);  // the newer root stays, readable
}

// Two instances sweeping at once: the one that finds the sweep's advisory lock taken stops
// (skipped) and deletes nothing; the other one sweeps.
TEST_F(PgDatabaseTest, ASweepWhileAnotherInstanceSweepsIsSkipped) {
  base::FakeClock clock;
  auto trail = backend_->OpenTrailStore();
  ASSERT_TRUE(trail.ok()) << trail.status();
  trail::Scope root;
  root.id = "ses_old";
  root.session = trail::SessionRef{"local", "default", "old"};
  root.kind = trail::ScopeKind::kSession;
  root.created_at_ms = clock.WallMillis();
  ASSERT_TRUE((*trail)->OpenScope(root).ok());
  clock.Advance(std::chrono::hours(24 * 31));
  auto first = PgDatabase::Open(backend_->options());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = PgRetentionStore::Open(backend_->options());
  ASSERT_TRUE(second.ok()) << second.status();
  RetentionPolicy policy;
  policy.pause_us = 0;
  absl::StatusOr<RetentionReport> during;
  ASSERT_TRUE((*first)
                  ->Write([&](PgConn& c) -> absl::Status {
                    auto locked = c.Exec("SELECT pg_advisory_xact_lock($1)", {kRetentionLockKey});
                    if (!locked.ok()) return locked.status();
                    during = (*second)->Sweep(policy, clock.WallMillis());
                    return absl::OkStatus();
                  })
                  .ok());
  ASSERT_TRUE(during.ok()) << during.status();
  EXPECT_TRUE(during->skipped);
  EXPECT_EQ(during->scopes.rows, 0);
  auto after = (*second)->Sweep(policy, clock.WallMillis());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->skipped);
  EXPECT_EQ(after->scopes.rows, 1);
}

TEST_F(PgDatabaseTest, UnreachableServerIsUnavailableWithoutThePassword) {
  PgOptions o;
  o.conninfo = "postgresql://ctx:topsecret@127.0.0.1:1/contextd";
  o.connect_timeout_s = 2;
  auto db = PgDatabase::Open(o);
  EXPECT_EQ(db.status().code(), absl::StatusCode::kUnavailable) << db.status();
  EXPECT_EQ(db.status().message().find("topsecret"), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("127.0.0.1"), std::string::npos) << db.status();
}

TEST_F(PgDatabaseTest, ReadsSurviveALostConnectionAndThePoolIsBounded) {
  auto store = PgBranchStore::Open(backend_->options(2));
  ASSERT_TRUE(store.ok()) << store.status();
  folding::Branch b;
  b.id = "br_a";
  b.session = {"local", "default", "s1"};
  b.description = "d";
  b.prompt = "p";
  ASSERT_TRUE((*store)->Commit(folding::BranchWrite{{b}, {}, {}}).ok());
  ASSERT_TRUE((*store)->Get("br_a").ok());
  // Every pooled connection is killed by the server: the next read reconnects and succeeds.
  ASSERT_TRUE(testing::PgTestServer::Shared()->TerminateBackends(backend_->dbname()).ok());
  auto again = (*store)->Get("br_a");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->has_value());
  // Many threads on a pool of 2: they wait for a connection, none fails.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        if (!(*store)->Get("br_a").ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  int connections = 0;
  ASSERT_TRUE((*store)
                  ->database()
                  .Read([&](PgConn& c) -> absl::Status {
                    auto r = c.Exec(
                        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND application_name = 'contextd'");
                    if (!r.ok()) return r.status();
                    connections = static_cast<int>(r->Int(0, 0));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_LE(connections, 2);
}

// Two instances (two pools, as two processes would have) claim the same due branches at once,
// from several threads each: every branch is claimed by exactly one instance; its claim is renewed
// by the holder, refused to the other until the lease runs out, and an ended branch says so.
TEST_F(PgDatabaseTest, EachDeadlineIsClaimedByExactlyOneInstance) {
  auto a = PgBranchStore::Open(backend_->options(3));
  auto b = PgBranchStore::Open(backend_->options(3));
  ASSERT_TRUE(a.ok() && b.ok());
  constexpr int kBranches = 200;
  folding::BranchWrite w;
  for (int i = 0; i < kBranches; ++i) {
    folding::Branch br;
    br.id = absl::StrCat("br_", i);
    br.session = {"local", "default", absl::StrCat("s", i % 7)};
    br.description = "d";
    br.prompt = "p";
    br.deadline_wall_ms = 1000 + i;
    w.inserts.push_back(br);
  }
  ASSERT_TRUE((*a)->Commit(w).ok());
  std::atomic<int> claimed_by[2] = {0, 0};
  std::vector<std::atomic<int>> claims(kBranches);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    PgBranchStore* store = t % 2 == 0 ? a->get() : b->get();
    threads.emplace_back([&, t, store] {
      for (int i = 0; i < kBranches; ++i) {
        auto c = store->ClaimDeadline(absl::StrCat("br_", (i + t * 31) % kBranches), 5000, 30000);
        ASSERT_TRUE(c.ok()) << c.status();
        if (*c == folding::DeadlineClaim::kClaimed) {
          ++claims[(i + t * 31) % kBranches];
          ++claimed_by[t % 2];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  // A holder's own threads may renew (claim again): count instances, not claims.
  int total_instances = 0;
  for (int i = 0; i < kBranches; ++i) {
    EXPECT_GE(claims[i].load(), 1) << i;
    auto holder_a = (*a)->ClaimDeadline(absl::StrCat("br_", i), 5001, 30000);
    auto holder_b = (*b)->ClaimDeadline(absl::StrCat("br_", i), 5001, 30000);
    ASSERT_TRUE(holder_a.ok() && holder_b.ok());
    int holders = (*holder_a == folding::DeadlineClaim::kClaimed) +
                  (*holder_b == folding::DeadlineClaim::kClaimed);
    EXPECT_EQ(holders, 1) << "br_" << i;
    total_instances += holders;
  }
  EXPECT_EQ(total_instances, kBranches);
  EXPECT_GT(claimed_by[0].load() + claimed_by[1].load(), 0);
  // After the lease, the other instance may take over (its holder died).
  auto first = (*a)->ClaimDeadline("br_0", 5001, 30000);
  auto other = first.ok() && *first == folding::DeadlineClaim::kClaimed ? b->get() : a->get();
  EXPECT_EQ(*other->ClaimDeadline("br_0", 6000, 30000), folding::DeadlineClaim::kHeldElsewhere);
  EXPECT_EQ(*other->ClaimDeadline("br_0", 40000, 30000), folding::DeadlineClaim::kClaimed);
  // An ended branch is no one's to claim.
  folding::BranchUpdate done{"br_0", folding::BranchStatus::kTimeout, 0, 0, "s", "deadline", 40001,
                             false};
  ASSERT_TRUE((*a)->Commit(folding::BranchWrite{{}, {done}, {}}).ok());
  EXPECT_EQ(*(*a)->ClaimDeadline("br_0", 90000, 30000), folding::DeadlineClaim::kEnded);
  EXPECT_EQ(*(*a)->ClaimDeadline("br_missing", 90000, 30000), folding::DeadlineClaim::kEnded);
  // The sweep lists the sessions with overdue branches nobody holds.
  auto due = (*a)->ListDueSessions(100000, 100000, 100);
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_EQ(due->size(), 7u);
  due = (*a)->ListDueSessions(100000, 5002, 100);  // every lease still running
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());
}

// Two engines (BranchManagers on their own executors, over two pools) hold the same session, as
// when a client's requests went to both: at the deadline exactly one force-returns the branch,
// the other follows the store. Then a third engine that never saw the session sweeps: nothing
// is left to time out.
TEST_F(PgDatabaseTest, TwoEnginesTimeOutASharedBranchOnce) {
  auto store_a = PgBranchStore::Open(backend_->options(2));
  auto store_b = PgBranchStore::Open(backend_->options(2));
  ASSERT_TRUE(store_a.ok() && store_b.ok());
  base::FakeClock clock;
  base::ManualExecutor exec_a(clock), exec_b(clock);
  folding::testing::WordTokenCounter counter;
  folding::testing::FakeScrubber scrubber;
  folding::EventBus bus_a, bus_b;
  std::vector<folding::BranchEvent> events_a, events_b;
  bus_a.Subscribe([&](const folding::BranchEvent& e) { events_a.push_back(e); });
  bus_b.Subscribe([&](const folding::BranchEvent& e) { events_b.push_back(e); });
  folding::BranchManager a({}, exec_a, **store_a, counter, scrubber, &bus_a);
  folding::BranchManager b({}, exec_b, **store_b, counter, scrubber, &bus_b);
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
  });
  exec_a.RunUntilIdle();
  ASSERT_FALSE(id.empty());
  exec_b.Post([&] { ASSERT_TRUE(b.LoadSession(s).ok()); });
  exec_b.RunUntilIdle();
  EXPECT_EQ(b.active_branches(), 1);
  clock.Advance(std::chrono::seconds(61));
  exec_b.RunUntilIdle();  // b's timer first: b claims and force-returns
  exec_a.RunUntilIdle();  // a's timer: the store says ended, a reloads the session
  auto count = [](const std::vector<folding::BranchEvent>& ev) {
    int n = 0;
    for (const auto& e : ev) n += e.type == folding::BranchEventType::kForceReturned;
    return n;
  };
  EXPECT_EQ(count(events_a) + count(events_b), 1);
  EXPECT_EQ(count(events_b), 1);
  EXPECT_EQ(a.active_branches(), 0);
  EXPECT_EQ(b.active_branches(), 0);
  auto stored = (*store_a)->Get(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->status, folding::BranchStatus::kTimeout);
  auto due = (*store_a)->ListDueSessions(clock.WallMillis(), clock.WallMillis(), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());
}

}  // namespace
}  // namespace contextd::store
