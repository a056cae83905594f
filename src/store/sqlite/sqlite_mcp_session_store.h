// SqliteMcpSessionStore: McpSessionStore in contextd's SQLite database (table mcp_sessions of
// migration 0013). Each call is one write transaction (Database::BeginWrite/EndWrite).
// Thread-safe: calls are serialised on the Database's mutex.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/mcp_session_store.h"
#include "store/sqlite/database.h"

namespace contextd::store {

class SqliteMcpSessionStore final : public McpSessionStore {
 public:
  // Opens (creating and migrating) the database file at `path` with its own connection.
  static absl::StatusOr<std::unique_ptr<SqliteMcpSessionStore>> Open(const std::string& path);
  // Uses an open database (shared with other stores).
  static std::unique_ptr<SqliteMcpSessionStore> Create(std::shared_ptr<Database> db);

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
  explicit SqliteMcpSessionStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  // Runs `body` in one write transaction under the database's mutex.
  absl::Status InWrite(const std::function<absl::Status()>& body);

  std::shared_ptr<Database> db_;
};

}  // namespace contextd::store
