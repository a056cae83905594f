// Test-only: the SQLite StoreBackend (a database file in a fresh temporary directory; every
// Open* opens its own connection to it). Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "store/sqlite/sqlite_branch_store.h"
#include "store/sqlite/sqlite_conversation_store.h"
#include "store/sqlite/sqlite_mcp_session_store.h"
#include "store/sqlite/sqlite_memory_store.h"
#include "store/sqlite/sqlite_outbox_store.h"
#include "store/sqlite/sqlite_retention_store.h"
#include "store/sqlite/sqlite_trail_store.h"
#include "store/test_util.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class SqliteBackend final : public StoreBackend {
 public:
  absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() override {
    auto s = SqliteBranchStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<folding::BranchStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() override {
    auto s = SqliteTrailStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<trail::TrailStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() override {
    auto s = SqliteConversationStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<model::ConversationStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() override {
    auto s = SqliteMemoryStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<memory::MemoryStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() override {
    auto s = SqliteRetentionStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<RetentionStore>(std::move(*s));
  }
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms) override {
    auto s = SqliteConversationStore::Open(path());
    if (!s.ok()) return s.status();
    return (*s)->UsageByProject(tenant, since_ms);
  }
  absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() override {
    auto s = SqliteMcpSessionStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<McpSessionStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore(
      folding::BranchStore&) override {
    auto s = SqliteOutboxStore::Open(path());
    if (!s.ok()) return s.status();
    return std::unique_ptr<folding::OutboxStore>(std::move(*s));
  }
  std::string path() const { return tmp_.File("contextd.db"); }

 private:
  TempDir tmp_;
};

inline BackendFactory SqliteFactory() {
  return {"Sqlite", [] { return std::unique_ptr<StoreBackend>(new SqliteBackend()); }};
}

}  // namespace contextd::store::testing
