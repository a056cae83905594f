// Row mapping written once for both backends: Row is one result row as either database returns
// it (SqliteRow over a Statement, PgRow over a PgResult row), and the mappers below turn rows
// of the same column lists into domain values. A Row is a view: valid while its statement or
// result is; not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "folding/branch.h"
#include "memory/memory_item.h"
#include "store/mcp_session_store.h"
#include "trail/trail_store.h"

namespace contextd::store {

class Row {
 public:
  virtual ~Row() = default;
  virtual bool IsNull(int col) const = 0;
  virtual int64_t Int(int col) const = 0;
  virtual std::string Text(int col) const = 0;
  // A BLOB (SQLite) or bytea (PostgreSQL) column's bytes; empty for NULL.
  virtual std::string Bytes(int col) const = 0;
  // A boolean column (SQLite: an integer, nonzero is true).
  virtual bool Bool(int col) const = 0;
};

// The columns McpSessionFromRow reads, in order (both backends' mcp_sessions).
inline constexpr char kMcpSessionColumns[] =
    "id, tenant, project, project_label, project_header, protocol_version, "
    "client_capabilities, client_info, created_ms, last_seen_ms, ended_ms, end_reason";

McpSessionRecord McpSessionFromRow(const Row& row);

// A branch from the first 18 columns of its store's branch SELECT (id, tenant, project,
// session_id, parent_id, depth, description, prompt, status, budget_allocated, tokens_used,
// reserved_for_children, deadline_ms, created_at_ms, finished_at_ms, summary, finish_reason,
// memory_queued); its injected context and version are the caller's. DataLoss naming the branch
// for a status this binary does not know.
absl::StatusOr<folding::Branch> BranchFromRow(const Row& row);

// One injected context from (kind, ref, text, tokens).
folding::InjectedContext InjectionFromRow(const Row& row);

// The columns MemoryItemFromRow reads, in order (both backends' memories).
inline constexpr char kMemoryItemColumns[] =
    "id, tenant, project, scope, status, outcome, title, description, content, tags, "
    "source_branch_id, source_description, source_prompt, origin, created_at_ms, updated_at_ms, "
    "use_count, helpful_count, unhelpful_count, success_count, failure_count, merged_into";

// A memory item from a row of kMemoryItemColumns (tags: one per line). Internal naming the item
// for a scope, status or outcome the schema's CHECKs should have kept out.
absl::StatusOr<memory::MemoryItem> MemoryItemFromRow(const Row& row);

// The columns ScopeFromRow reads, in order: `s` is trail_scopes; the last two count and sum its
// events.
inline constexpr char kTrailScopeColumns[] =
    "s.id, s.tenant, s.project, s.session_id, s.kind, s.parent_id, s.description, s.status, "
    "s.summary, s.summary_tokens, s.created_at_ms, s.folded_at_ms, "
    "(SELECT COUNT(*) FROM trail_events e WHERE e.scope_id = s.id), "
    "(SELECT COALESCE(SUM(e.tokens), 0) FROM trail_events e WHERE e.scope_id = s.id)";
inline constexpr int kTrailScopeColumnCount = 14;

// A trail scope from a row of kTrailScopeColumns (the schema's CHECKs admit only known kinds).
trail::Scope ScopeFromRow(const Row& row);

// The columns EventFromRow reads, in order, with their FROM clause: `e` is trail_events, `b` its
// blob.
inline constexpr char kTrailEventColumns[] =
    "e.seq, e.scope_id, e.kind, e.label, b.content, e.blob_hash, e.tokens, e.is_error, e.at_ms "
    "FROM trail_events e JOIN trail_blobs b ON b.hash = e.blob_hash";

// A trail event from a row of kTrailEventColumns (the payload's bytes as stored).
// InvalidArgument (trail::ParseEventKind) for a kind this binary does not know.
absl::StatusOr<trail::Event> EventFromRow(const Row& row);

}  // namespace contextd::store
