// Test-only: the PostgreSQL StoreBackend: a fresh database on this process's PgTestServer; every
// Open* opens its own PgDatabase (pool) on it. Skips with the server's reason when PostgreSQL
// cannot start, or fails instead when CONTEXTD_REQUIRE_POSTGRES=1. Not thread-safe.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "store/postgres/pg_branch_store.h"
#include "store/postgres/pg_conversation_store.h"
#include "store/postgres/pg_mcp_session_store.h"
#include "store/postgres/pg_memory_store.h"
#include "store/postgres/pg_outbox_store.h"
#include "store/postgres/pg_retention_store.h"
#include "store/postgres/pg_trail_store.h"
#include "store/testing/pg_test_server.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class PgBackend final : public StoreBackend {
 public:
  PgBackend() {
    PgTestServer* server = PgTestServer::Shared();
    if (server == nullptr) {
      skip_ = "PostgreSQL tests skipped: " + PgTestServer::SharedError();
      const char* req = std::getenv("CONTEXTD_REQUIRE_POSTGRES");
      if (req != nullptr && std::string(req) == "1") {
        ADD_FAILURE() << "PostgreSQL is required but cannot start: " << PgTestServer::SharedError();
      }
      return;
    }
    auto db = server->CreateDatabase();
    if (!db.ok()) {
      ADD_FAILURE() << db.status();
      skip_ = std::string(db.status().message());
      return;
    }
    dbname_ = *db;
    conninfo_ = server->Conninfo(*db);
  }
  std::string SkipReason() override { return skip_; }
  PgOptions options(int pool_size = 4) const {
    PgOptions o;
    o.conninfo = conninfo_;
    o.pool_size = pool_size;
    return o;
  }
  absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() override {
    auto s = PgBranchStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<folding::BranchStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() override {
    auto s = PgTrailStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<trail::TrailStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() override {
    auto s = PgConversationStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<model::ConversationStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() override {
    auto s = PgMemoryStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<memory::MemoryStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() override {
    auto s = PgRetentionStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<RetentionStore>(std::move(*s));
  }
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms) override {
    auto s = PgConversationStore::Open(options());
    if (!s.ok()) return s.status();
    return (*s)->UsageByProject(tenant, since_ms);
  }
  absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() override {
    auto s = PgMcpSessionStore::Open(options());
    if (!s.ok()) return s.status();
    return std::unique_ptr<McpSessionStore>(std::move(*s));
  }
  absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore(
      folding::BranchStore& writer) override {
    auto db = PgDatabase::Open(options());
    if (!db.ok()) return db.status();
    return std::unique_ptr<folding::OutboxStore>(PgOutboxStore::Create(
        std::shared_ptr<PgDatabase>(std::move(*db)), static_cast<PgBranchStore&>(writer).owner()));
  }
  const std::string& conninfo() const { return conninfo_; }
  const std::string& dbname() const { return dbname_; }

 private:
  std::string skip_;
  std::string dbname_;
  std::string conninfo_;
};

inline BackendFactory PgFactory() {
  return {"Postgres", [] { return std::unique_ptr<StoreBackend>(new PgBackend()); }};
}

}  // namespace contextd::store::testing
