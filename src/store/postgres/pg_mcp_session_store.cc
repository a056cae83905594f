#include "store/postgres/pg_mcp_session_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

constexpr const char* kColumns = kMcpSessionColumns;

McpSessionRecord ReadRow(const PgResult& res, int i) { return McpSessionFromRow(PgRow(res, i)); }

}  // namespace

absl::StatusOr<std::unique_ptr<PgMcpSessionStore>> PgMcpSessionStore::Open(
    const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

std::unique_ptr<PgMcpSessionStore> PgMcpSessionStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgMcpSessionStore>(new PgMcpSessionStore(std::move(db)));
}

absl::Status PgMcpSessionStore::Create(const McpSessionRecord& r) {
  return db_->Write([&](PgConn& c) -> absl::Status {
    auto done =
        c.Exec(absl::StrCat("INSERT INTO mcp_sessions (", kColumns,
                            ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,NULL,'')"),
               {r.id, r.tenant, r.project, r.project_label, r.project_header, r.protocol_version,
                r.client_capabilities, r.client_info, r.created_ms, r.last_seen_ms});
    if (!done.ok() && done.status().code() == absl::StatusCode::kAlreadyExists) {
      return absl::AlreadyExistsError(absl::StrCat("MCP session ", r.id, " exists"));
    }
    return done.status();
  });
}

absl::StatusOr<std::optional<McpSessionRecord>> PgMcpSessionStore::Get(std::string_view id) {
  std::optional<McpSessionRecord> out;
  const absl::Status read = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult res,
                     c.Exec(absl::StrCat("SELECT ", kColumns, " FROM mcp_sessions WHERE id = $1"),
                            {std::string(id)}));
    out.reset();
    if (res.rows() == 0) return absl::OkStatus();
    out = ReadRow(res, 0);
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  return out;
}

absl::Status PgMcpSessionStore::SetProject(std::string_view id, std::string_view project,
                                           std::string_view project_label) {
  return db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("UPDATE mcp_sessions SET project = $1, "
                                        "project_label = $2 WHERE id = $3",
                                        {project, project_label, id}));
    if (r.affected() != 1) {
      return absl::NotFoundError(absl::StrCat("MCP session ", std::string(id), " not found"));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<std::string>> PgMcpSessionStore::Touch(
    const std::vector<std::string>& ids, int64_t now_ms) {
  for (const std::string& id : ids) {
    if (id.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError("an MCP session id holds a newline");
    }
  }
  std::vector<std::string> open;
  if (ids.empty()) return open;
  // One statement for the whole batch: the ids travel as one newline-joined parameter.
  const absl::Status written = db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("UPDATE mcp_sessions SET last_seen_ms = GREATEST(last_seen_ms, $2) "
               "WHERE id = ANY (string_to_array($1, E'\\n')) AND ended_ms IS NULL RETURNING id",
               {absl::StrJoin(ids, "\n"), now_ms}));
    open.clear();
    for (int i = 0; i < r.rows(); ++i) open.push_back(r.Text(i, 0));
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return open;
}

absl::StatusOr<bool> PgMcpSessionStore::End(std::string_view id, int64_t now_ms,
                                            std::string_view reason, int64_t idle_before_ms) {
  bool ended = false;
  const absl::Status written = db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec("UPDATE mcp_sessions SET ended_ms = $1, end_reason = $2 "
                            "WHERE id = $3 AND ended_ms IS NULL AND ($4::bigint <= 0 OR "
                            "last_seen_ms < $4::bigint)",
                            {now_ms, reason, id, idle_before_ms}));
    ended = r.affected() == 1;
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return ended;
}

absl::StatusOr<std::vector<McpSessionRecord>> PgMcpSessionStore::ListIdle(int64_t idle_before_ms,
                                                                          int limit) {
  std::vector<McpSessionRecord> out;
  const absl::Status read = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult res,
                     c.Exec(absl::StrCat("SELECT ", kColumns,
                                         " FROM mcp_sessions WHERE ended_ms IS NULL AND "
                                         "last_seen_ms < $1 ORDER BY last_seen_ms LIMIT $2"),
                            {idle_before_ms, static_cast<int64_t>(limit)}));
    out.clear();
    for (int i = 0; i < res.rows(); ++i) out.push_back(ReadRow(res, i));
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  return out;
}

}  // namespace contextd::store
