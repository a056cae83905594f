// The folding engine over the real SQLite store: restart recovery, kill -9 durability, and the
// lifecycle end to end at the engine level.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/testing/fakes.h"
#include "store/sqlite/sqlite_branch_store.h"
#include "store/test_util.h"

namespace contextd::store {
namespace {

using folding::BranchManager;
using folding::BranchStatus;
using folding::ChargeRecord;
using folding::CreateRequest;
using folding::ReturnRequest;
using folding::SessionKey;

CreateRequest Req(std::string prompt, std::optional<int64_t> budget,
                  std::optional<std::string> parent = std::nullopt) {
  CreateRequest r;
  r.description = "task";
  r.prompt = std::move(prompt);
  r.budget = budget;
  r.parent_branch_id = std::move(parent);
  return r;
}

ChargeRecord Rec(std::string label, std::string text) {
  ChargeRecord r;
  r.kind = "tool_result";
  r.label = std::move(label);
  r.text = std::move(text);
  return r;
}

// One engine over a SQLite file, driven on a manual executor.
struct Engine {
  explicit Engine(const std::string& path, folding::FoldingConfig config = {}) : exec(clock) {
    auto s = SqliteBranchStore::Open(path);
    if (!s.ok()) {
      status = s.status();
      return;
    }
    store = std::move(*s);
    mgr = std::make_unique<BranchManager>(config, exec, *store, counter, scrubber, nullptr);
  }
  ~Engine() { mgr.reset(); }
  template <typename F>
  auto Run(F f) -> decltype(f()) {
    std::optional<decltype(f())> out;
    exec.Post([&] { out.emplace(f()); });
    exec.RunUntilIdle();
    return std::move(*out);
  }

  absl::Status status;
  base::FakeClock clock;
  base::ManualExecutor exec;
  folding::testing::WordTokenCounter counter;
  folding::testing::FakeScrubber scrubber;
  std::unique_ptr<SqliteBranchStore> store;
  std::unique_ptr<BranchManager> mgr;
};

const SessionKey kS1{"local", "default", "s1"};
const SessionKey kS2{"local", "default", "s2"};

TEST(FoldingOverSqliteTest, AfterALostGroupTheEngineReloadsWhatTheStoreKept) {
  TempDir tmp;
  Engine e(tmp.File("contextd.db"));
  ASSERT_TRUE(e.status.ok()) << e.status;
  Database& db = e.store->database();
  db.EnableGroupCommit([] {});
  folding::CreateRequest kept_req = Req("one two", 1000);
  kept_req.timeout_seconds = 30;
  auto kept = e.Run([&] { return e.mgr->Create(kS1, kept_req); });
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(db.CommitGroup().ok());
  // The next group holds a child and a charge, and then fails to commit (a deferred foreign-key
  // violation is checked only at COMMIT, like a disk failure there): both are lost.
  auto lost = e.Run([&] { return e.mgr->Create(kS1, Req("three", 100)); });
  ASSERT_TRUE(lost.ok());
  ASSERT_TRUE(
      e.Run([&] { return e.mgr->Charge(kS1, kept->branch_id, Rec("fs__read", "x y")); }).ok());
  {
    std::lock_guard<std::mutex> lock(db.mutex());
    ASSERT_TRUE(db.BeginWrite().ok());
    ASSERT_TRUE(db.EndWrite(db.Exec("PRAGMA defer_foreign_keys=ON; INSERT INTO branch_charges "
                                    "(branch_id, at_ms, kind, label, excerpt, tokens) VALUES "
                                    "('br_none', 0, 'x', 'x', 'x', 0)"))
                    .ok());
  }
  ASSERT_FALSE(db.CommitGroup().ok());
  ASSERT_TRUE(e.Run([&] { return e.mgr->ReloadFromStore(); }).ok());
  // Memory follows the store again: the lost child is unknown, the kept branch is active with
  // what was committed (its prompt only), and its deadline still fires.
  auto child = e.Run([&] { return e.mgr->Status(kS1, lost->branch_id); });
  EXPECT_EQ(child.status().code(), absl::StatusCode::kNotFound);
  auto st = e.Run([&] { return e.mgr->Status(kS1, ""); });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->active_branch_id, kept->branch_id);
  ASSERT_EQ(st->branches.size(), 1u);
  EXPECT_EQ(st->branches[0].tokens_used, 2);
  EXPECT_EQ(st->branches[0].reserved_for_children, 0);
  EXPECT_TRUE(st->branches[0].children.empty());
  EXPECT_EQ(e.mgr->active_branches(), 1);
  e.exec.AdvanceAndRun(std::chrono::seconds(30));
  ASSERT_TRUE(db.CommitGroup().ok());
  auto stored = e.store->Get(kept->branch_id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->status, BranchStatus::kTimeout);
}

TEST(FoldingOverSqliteTest, RestartRecoversBranchesLeftActive) {
  TempDir tmp;
  std::string path = tmp.File("contextd.db");
  std::string a, b;
  {
    Engine e(path);
    ASSERT_TRUE(e.status.ok()) << e.status;
    auto ca = e.Run([&] { return e.mgr->Create(kS1, Req("one two", 1000)); });
    auto cb = e.Run([&] { return e.mgr->Create(kS1, Req("three", 100)); });
    ASSERT_TRUE(ca.ok() && cb.ok());
    a = ca->branch_id;
    b = cb->branch_id;
    ASSERT_TRUE(e.Run([&] { return e.mgr->Charge(kS1, "", Rec("web__fetch", "x y z")); }).ok());
    // The engine goes away without returning anything (as in a crash).
  }
  Engine e(path);
  ASSERT_TRUE(e.status.ok());
  auto rec = e.Run([&] { return e.mgr->Recover(); });
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->force_returned, (std::vector<std::string>{b, a}));
  auto sb = e.store->Get(b);
  auto sa = e.store->Get(a);
  ASSERT_TRUE(sb.ok() && sb->has_value() && sa.ok() && sa->has_value());
  EXPECT_EQ((*sb)->status, BranchStatus::kFailed);
  EXPECT_EQ((*sb)->finish_reason, "server restarted");
  EXPECT_NE((*sb)->summary.find("web__fetch: x y z"), std::string::npos) << (*sb)->summary;
  EXPECT_EQ((*sa)->status, BranchStatus::kFailed);
  EXPECT_EQ((*sa)->tokens_used, 2 + 1 + 3);
  EXPECT_EQ((*sa)->reserved_for_children, 0);
  auto st = e.Run([&] { return e.mgr->Status(kS1, ""); });
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->branches.size(), 1u);
  EXPECT_EQ(st->branches[0].children.at(0).finish_reason, "server restarted");
  EXPECT_EQ(st->active_branch_id, "");
}

// A child process acknowledges operations through a pipe, then is killed with SIGKILL: every
// acknowledged change is in the file.
TEST(FoldingOverSqliteTest, KillNineLosesNoAcknowledgedChange) {
  TempDir tmp;
  std::string path = tmp.File("contextd.db");
  ChildRun child = RunInChild([&](int ack_fd) {
    Engine e(path);
    if (!e.status.ok()) _exit(2);
    auto ack = [&](const std::string& line) {
      std::string l = line + "\n";
      if (write(ack_fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(3);
    };
    auto a = e.Run([&] { return e.mgr->Create(kS1, Req("alpha", 1000)); });
    if (!a.ok()) _exit(4);
    ack("A " + a->branch_id);
    for (int i = 0; i < 3; ++i) {
      if (!e.Run([&] { return e.mgr->Charge(kS1, "", Rec("t", "one two three four")); }).ok()) {
        _exit(5);
      }
      ack("C");
    }
    auto b = e.Run([&] { return e.mgr->Create(kS1, Req("beta gamma", 200)); });
    if (!b.ok()) _exit(6);
    ack("B " + b->branch_id);
    ReturnRequest r;
    r.message = "beta result";
    if (!e.Run([&] { return e.mgr->Return(kS1, r); }).ok()) _exit(7);
    ack("R");
    raise(SIGKILL);
    _exit(8);
  });
  ASSERT_TRUE(KilledBySigkill(child));
  const std::string& acks = child.acks;
  ASSERT_NE(acks.find("R\n"), std::string::npos) << acks;
  std::string a = acks.substr(2, acks.find('\n') - 2);
  size_t bpos = acks.find("B ");
  std::string b = acks.substr(bpos + 2, acks.find('\n', bpos) - bpos - 2);

  auto store = SqliteBranchStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto sa = (*store)->Get(a);
  auto sb = (*store)->Get(b);
  ASSERT_TRUE(sa.ok() && sa->has_value() && sb.ok() && sb->has_value());
  EXPECT_EQ((*sb)->status, BranchStatus::kCompleted);
  EXPECT_EQ((*sb)->summary, "beta result");
  EXPECT_EQ((*sb)->tokens_used, 2 + 2);
  EXPECT_EQ((*sa)->status, BranchStatus::kActive);
  EXPECT_EQ((*sa)->tokens_used, 1 + 3 * 4 + 4);  // prompt, three charges, b's consumption
  EXPECT_EQ((*sa)->reserved_for_children, 0);
  EXPECT_EQ((*store)->GetRecentCharges(a, 10)->total, 4);  // 3 charges + b's return
}

TEST(FoldingOverSqliteTest, LifecycleEndToEnd) {
  TempDir tmp;
  Engine e(tmp.File("contextd.db"));
  ASSERT_TRUE(e.status.ok());
  auto a = e.Run([&] { return e.mgr->Create(kS1, Req("a", 4000)); });
  auto b = e.Run([&] { return e.mgr->Create(kS1, Req("b", 2000)); });
  auto c = e.Run([&] { return e.mgr->Create(kS1, Req("c", 1000)); });
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto d = e.Run([&] { return e.mgr->Create(kS1, Req("d", 10)); });
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  auto other = e.Run([&] {
    ReturnRequest r;
    r.branch_id = a->branch_id;
    r.message = "x";
    return e.mgr->Return(kS2, r);
  });
  EXPECT_EQ(other.status().code(), absl::StatusCode::kNotFound);
  auto ret = e.Run([&] {
    ReturnRequest r;
    r.branch_id = b->branch_id;
    r.message = "b folded";
    return e.mgr->Return(kS1, r);
  });
  ASSERT_TRUE(ret.ok()) << ret.status();
  EXPECT_EQ(ret->force_returned_children, std::vector<std::string>{c->branch_id});
  EXPECT_EQ(ret->active_branch_after, a->branch_id);
  auto st = e.Run([&] { return e.mgr->Status(kS1, ""); });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->branches.at(0).children.at(0).status, BranchStatus::kCompleted);
  EXPECT_EQ(st->branches.at(0).children.at(0).children.at(0).status, BranchStatus::kFailed);
  auto end = e.Run([&] { return e.mgr->EndSession(kS1, "DELETE"); });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->force_returned, std::vector<std::string>{a->branch_id});
  auto sa = e.store->Get(a->branch_id);
  ASSERT_TRUE(sa.ok() && sa->has_value());
  EXPECT_EQ((*sa)->finish_reason, "session ended: DELETE");
  auto live = e.store->ListLive();
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(live->empty());
}

// Many threads post charges to a ThreadExecutor-owned engine writing to SQLite (run under tsan).
TEST(FoldingOverSqliteTest, ConcurrentChargesThroughTheExecutorAreAllDurable) {
  TempDir tmp;
  auto store = SqliteBranchStore::Open(tmp.File("contextd.db"));
  ASSERT_TRUE(store.ok());
  folding::testing::WordTokenCounter counter;
  folding::testing::FakeScrubber scrubber;
  base::ThreadExecutor exec;
  std::unique_ptr<BranchManager> mgr;
  exec.RunSync([&] {
    mgr = std::make_unique<BranchManager>(folding::FoldingConfig{}, exec, **store, counter,
                                          scrubber, nullptr);
  });
  std::string id;
  exec.RunSync([&] {
    auto c = mgr->Create(kS1, Req("go", 32768));
    ASSERT_TRUE(c.ok());
    id = c->branch_id;
  });
  constexpr int kThreads = 4, kEach = 50;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        exec.Post([&] { ok += mgr->Charge(kS1, id, Rec("t", "a b c")).ok(); });
      }
    });
  }
  for (auto& t : threads) t.join();
  exec.RunSync([] {});
  EXPECT_EQ(ok.load(), kThreads * kEach);
  auto b = (*store)->Get(id);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->tokens_used, 1 + kThreads * kEach * 3);
  EXPECT_EQ((*store)->GetRecentCharges(id, 1)->total, kThreads * kEach);
  exec.RunSync([&] { mgr.reset(); });
}

}  // namespace
}  // namespace contextd::store
