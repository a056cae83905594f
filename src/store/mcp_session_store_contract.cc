// The contract of McpSessionStore, run against every backend (SQLite, PostgreSQL). Two store
// objects on one database stand for two instances sharing it.
#include "store/mcp_session_store_contract.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace contextd::store::testing {
namespace {

McpSessionRecord MakeRecord(std::string id, int64_t at_ms) {
  McpSessionRecord r;
  r.id = std::move(id);
  r.tenant = "acme";
  r.project_header = "/home/u/proj";
  r.protocol_version = "2025-06-18";
  r.client_capabilities = R"({"roots":{"listChanged":true},"sampling":{}})";
  r.client_info = R"({"name":"claude-code","version":"2.0 \u00e9"})";
  r.created_ms = at_ms;
  r.last_seen_ms = at_ms;
  return r;
}

}  // namespace

void McpSessionStoreContractTest::SetUp() {
  backend_ = GetParam().make();
  if (!backend_->SkipReason().empty()) GTEST_SKIP() << backend_->SkipReason();
  auto s = backend_->OpenMcpSessionStore();
  ASSERT_TRUE(s.ok()) << s.status();
  store_ = std::move(*s);
}

TEST_P(McpSessionStoreContractTest, CreateThenGetReturnsWhatInitializeNegotiated) {
  McpSessionRecord r = MakeRecord("sid1", 1'750'000'000'000);
  ASSERT_TRUE(store_->Create(r).ok());
  auto got = store_->Get("sid1");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, r);
  auto missing = store_->Get("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(store_->Create(r).code(), absl::StatusCode::kAlreadyExists);
}

TEST_P(McpSessionStoreContractTest, SetProjectIsSeenByAnotherInstance) {
  ASSERT_TRUE(store_->Create(MakeRecord("sid1", 1)).ok());
  ASSERT_TRUE(store_->SetProject("sid1", "p_abc", "/home/u/proj").ok());
  EXPECT_EQ(store_->SetProject("nope", "p", "").code(), absl::StatusCode::kNotFound);
  auto other = backend_->OpenMcpSessionStore();
  ASSERT_TRUE(other.ok());
  auto got = (*other)->Get("sid1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->project, "p_abc");
  EXPECT_EQ((*got)->project_label, "/home/u/proj");
}

TEST_P(McpSessionStoreContractTest, TouchMovesLastSeenForwardAndNamesOpenSessions) {
  ASSERT_TRUE(store_->Create(MakeRecord("a", 100)).ok());
  ASSERT_TRUE(store_->Create(MakeRecord("b", 100)).ok());
  ASSERT_TRUE(store_->Create(MakeRecord("c", 100)).ok());
  ASSERT_TRUE(*store_->End("c", 150, "client deleted session"));
  auto open = store_->Touch({"a", "b", "c", "unknown"}, 200);
  ASSERT_TRUE(open.ok()) << open.status();
  std::vector<std::string> sorted = *open;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*store_->Get("a"))->last_seen_ms, 200);
  EXPECT_EQ((*store_->Get("c"))->last_seen_ms, 100);  // ended: untouched
  // Never backwards (an instance with a late clock or a late batch).
  ASSERT_TRUE(store_->Touch({"a"}, 150).ok());
  EXPECT_EQ((*store_->Get("a"))->last_seen_ms, 200);
  EXPECT_TRUE(store_->Touch({}, 300)->empty());
  EXPECT_EQ(store_->Touch({"a\nb"}, 300).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(McpSessionStoreContractTest, EndIsOnceAndIdleEndSparesASessionSeenSince) {
  ASSERT_TRUE(store_->Create(MakeRecord("sid1", 100)).ok());
  ASSERT_TRUE(store_->Touch({"sid1"}, 500).ok());
  // Idle since before 400? No: seen at 500 (by another instance, say).
  auto idle = store_->End("sid1", 600, "idle timeout", 400);
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_FALSE(*idle);
  EXPECT_EQ((*store_->Get("sid1"))->ended_ms, 0);
  idle = store_->End("sid1", 700, "idle timeout", 501);
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(*idle);
  auto got = store_->Get("sid1");
  EXPECT_EQ((*got)->ended_ms, 700);
  EXPECT_EQ((*got)->end_reason, "idle timeout");
  // Ended already: a DELETE elsewhere does not end it twice.
  EXPECT_FALSE(*store_->End("sid1", 800, "client deleted session"));
  EXPECT_EQ((*store_->Get("sid1"))->end_reason, "idle timeout");
  EXPECT_FALSE(*store_->End("unknown", 800, "client deleted session"));
}

TEST_P(McpSessionStoreContractTest, ListIdleNamesOpenSessionsNotSeenSinceOldestFirst) {
  ASSERT_TRUE(store_->Create(MakeRecord("recent", 900)).ok());
  ASSERT_TRUE(store_->Create(MakeRecord("old", 100)).ok());
  ASSERT_TRUE(store_->Create(MakeRecord("older", 50)).ok());
  ASSERT_TRUE(store_->Create(MakeRecord("ended", 10)).ok());
  ASSERT_TRUE(*store_->End("ended", 20, "client deleted session"));
  auto idle = store_->ListIdle(500, 10);
  ASSERT_TRUE(idle.ok()) << idle.status();
  ASSERT_EQ(idle->size(), 2u);
  EXPECT_EQ((*idle)[0].id, "older");
  EXPECT_EQ((*idle)[1].id, "old");
  EXPECT_EQ((*idle)[1].client_capabilities, MakeRecord("x", 0).client_capabilities);
  EXPECT_EQ(store_->ListIdle(500, 1)->size(), 1u);
}

TEST_P(McpSessionStoreContractTest, OfInstancesEndingAtOnceExactlyOneEnds) {
  ASSERT_TRUE(store_->Create(MakeRecord("sid1", 100)).ok());
  constexpr int kInstances = 4;
  std::vector<std::unique_ptr<McpSessionStore>> stores;
  for (int i = 0; i < kInstances; ++i) {
    auto s = backend_->OpenMcpSessionStore();
    ASSERT_TRUE(s.ok()) << s.status();
    stores.push_back(std::move(*s));
  }
  std::atomic<int> ended{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kInstances; ++i) {
    threads.emplace_back([&, i] {
      auto e = stores[i]->End("sid1", 200 + i, "idle timeout", 150);
      if (!e.ok()) {
        ++failed;
      } else if (*e) {
        ++ended;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ended.load(), 1);
}

}  // namespace contextd::store::testing
