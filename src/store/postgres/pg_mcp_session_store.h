// PgMcpSessionStore: McpSessionStore in PostgreSQL (table mcp_sessions of pg_migrations.h,
// migration 2). Each call is one statement in its own transaction, committed before it returns;
// End's condition and its update are one UPDATE, so of several instances one ends a session.
// Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/mcp_session_store.h"
#include "store/postgres/pg_database.h"

namespace contextd::store {

class PgMcpSessionStore final : public McpSessionStore {
 public:
  // Connects (and migrates) with its own pool.
  static absl::StatusOr<std::unique_ptr<PgMcpSessionStore>> Open(const PgOptions& options);
  // Uses an open database (shared with other stores).
  static std::unique_ptr<PgMcpSessionStore> Create(std::shared_ptr<PgDatabase> db);

  absl::Status Create(const McpSessionRecord& record) override;
  absl::StatusOr<std::optional<McpSessionRecord>> Get(std::string_view id) override;
  absl::Status SetProject(std::string_view id, std::string_view project,
                          std::string_view project_label) override;
  absl::StatusOr<std::vector<std::string>> Touch(const std::vector<std::string>& ids,
                                                 int64_t now_ms) override;
  absl::StatusOr<bool> End(std::string_view id, int64_t now_ms, std::string_view reason,
                           int64_t idle_before_ms) override;
  absl::StatusOr<std::vector<McpSessionRecord>> ListIdle(int64_t idle_before_ms,
                                                         int limit) override;

 private:
  explicit PgMcpSessionStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
