#include "store/sqlite/sqlite_mcp_session_store.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

constexpr const char* kColumns = kMcpSessionColumns;

McpSessionRecord ReadRow(const Statement& st) { return McpSessionFromRow(SqliteRow(st)); }

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteMcpSessionStore>> SqliteMcpSessionStore::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  return Create(std::shared_ptr<Database>(std::move(db)));
}

std::unique_ptr<SqliteMcpSessionStore> SqliteMcpSessionStore::Create(std::shared_ptr<Database> db) {
  return std::unique_ptr<SqliteMcpSessionStore>(new SqliteMcpSessionStore(std::move(db)));
}

absl::Status SqliteMcpSessionStore::InWrite(const std::function<absl::Status()>& body) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  return db_->EndWrite(body());
}

absl::Status SqliteMcpSessionStore::Create(const McpSessionRecord& r) {
  return InWrite([&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement st,
                     db_->Prepare(absl::StrCat("INSERT INTO mcp_sessions (", kColumns,
                                               ") VALUES (?,?,?,?,?,?,?,?,?,?,NULL,'')")));
    st.Bind(1, r.id);
    st.Bind(2, r.tenant);
    st.Bind(3, r.project);
    st.Bind(4, r.project_label);
    st.Bind(5, r.project_header);
    st.Bind(6, r.protocol_version);
    st.Bind(7, r.client_capabilities);
    st.Bind(8, r.client_info);
    st.Bind(9, r.created_ms);
    st.Bind(10, r.last_seen_ms);
    absl::Status ran = st.Run();
    if (!ran.ok() && db_->LastErrorCode() == 19 /* SQLITE_CONSTRAINT */) {
      return absl::AlreadyExistsError(absl::StrCat("MCP session ", r.id, " exists"));
    }
    return ran;
  });
}

absl::StatusOr<std::optional<McpSessionRecord>> SqliteMcpSessionStore::Get(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(Statement st, db_->Prepare(absl::StrCat("SELECT ", kColumns,
                                                           " FROM mcp_sessions WHERE id = ?")));
  st.Bind(1, id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<McpSessionRecord>();
  McpSessionRecord r = ReadRow(st);
  return std::optional<McpSessionRecord>(std::move(r));
}

absl::Status SqliteMcpSessionStore::SetProject(std::string_view id, std::string_view project,
                                               std::string_view project_label) {
  return InWrite([&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement st, db_->Prepare("UPDATE mcp_sessions SET project = ?, "
                                                "project_label = ? WHERE id = ?"));
    st.Bind(1, project);
    st.Bind(2, project_label);
    st.Bind(3, id);
    RETURN_IF_ERROR(st.Run());
    if (db_->Changes() != 1) {
      return absl::NotFoundError(absl::StrCat("MCP session ", std::string(id), " not found"));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<std::string>> SqliteMcpSessionStore::Touch(
    const std::vector<std::string>& ids, int64_t now_ms) {
  for (const std::string& id : ids) {
    if (id.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError("an MCP session id holds a newline");
    }
  }
  std::vector<std::string> open;
  const absl::Status written = InWrite([&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement st,
                     db_->Prepare("UPDATE mcp_sessions SET last_seen_ms = MAX(last_seen_ms, ?) "
                                  "WHERE id = ? AND ended_ms IS NULL"));
    for (const std::string& id : ids) {
      st.Reset();
      st.Bind(1, now_ms);
      st.Bind(2, id);
      RETURN_IF_ERROR(st.Run());
      if (db_->Changes() == 1) open.push_back(id);
    }
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return open;
}

absl::StatusOr<bool> SqliteMcpSessionStore::End(std::string_view id, int64_t now_ms,
                                                std::string_view reason, int64_t idle_before_ms) {
  bool ended = false;
  const absl::Status written = InWrite([&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement st,
                     db_->Prepare("UPDATE mcp_sessions SET ended_ms = ?, end_reason = ? "
                                  "WHERE id = ? AND ended_ms IS NULL AND (? <= 0 OR "
                                  "last_seen_ms < ?)"));
    st.Bind(1, now_ms);
    st.Bind(2, reason);
    st.Bind(3, id);
    st.Bind(4, idle_before_ms);
    st.Bind(5, idle_before_ms);
    RETURN_IF_ERROR(st.Run());
    ended = db_->Changes() == 1;
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return ended;
}

absl::StatusOr<std::vector<McpSessionRecord>> SqliteMcpSessionStore::ListIdle(
    int64_t idle_before_ms, int limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(Statement st, db_->Prepare(absl::StrCat(
                                     "SELECT ", kColumns,
                                     " FROM mcp_sessions WHERE ended_ms IS NULL AND last_seen_ms "
                                     "< ? ORDER BY last_seen_ms LIMIT ?")));
  st.Bind(1, idle_before_ms);
  st.Bind(2, static_cast<int64_t>(limit));
  std::vector<McpSessionRecord> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadRow(st));
  }
  return out;
}

}  // namespace contextd::store
