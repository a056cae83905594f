#include "store/sqlite/sqlite_conversation_store.h"

#include <cstdint>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/conversation_rows.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

using model::ConversationKey;
using model::ConversationState;
using model::ConversationUpdate;
using model::Rewrite;
using model::UsageRecord;
using model::UsageTotals;

std::string TotalsSql() {
  return absl::StrCat("SELECT ", kUsageTotalsColumns, " FROM model_usage WHERE tenant = ?");
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteConversationStore>> SqliteConversationStore::Open(
    const std::string& path, const DatabaseOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  return Create(std::shared_ptr<Database>(std::move(db)));
}

absl::StatusOr<std::unique_ptr<SqliteConversationStore>> SqliteConversationStore::Create(
    std::shared_ptr<Database> db) {
  std::unique_ptr<SqliteConversationStore> store(new SqliteConversationStore(std::move(db)));
  RETURN_IF_ERROR(store->PrepareAll());
  return store;
}

absl::Status SqliteConversationStore::PrepareAll() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(
      upsert_thread_,
      db_->Prepare("INSERT INTO model_threads (tenant, conversation, thread, frontier, requests, "
                   "created_ms, last_ms) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5) "
                   "ON CONFLICT (tenant, conversation, thread) DO UPDATE SET "
                   "frontier = excluded.frontier, requests = requests + 1, "
                   "last_ms = excluded.last_ms"));
  // ON CONFLICT names the unique key, so only a repeated (kind, key) is skipped: a CHECK or
  // NOT NULL violation still fails the save (INSERT OR IGNORE would drop the row silently).
  ASSIGN_OR_RETURN(
      insert_rewrite_,
      db_->Prepare("INSERT INTO model_rewrites (tenant, conversation, thread, kind, key, value) "
                   "VALUES (?, ?, ?, ?, ?, ?) "
                   "ON CONFLICT (tenant, conversation, thread, kind, key) DO NOTHING"));
  ASSIGN_OR_RETURN(get_thread_,
                   db_->Prepare("SELECT frontier, requests, created_ms, last_ms FROM model_threads "
                                "WHERE tenant = ? AND conversation = ? AND thread = ?"));
  ASSIGN_OR_RETURN(get_rewrites_,
                   db_->Prepare("SELECT kind, key, value FROM model_rewrites WHERE tenant = ? AND "
                                "conversation = ? AND thread = ? ORDER BY seq"));
  ASSIGN_OR_RETURN(
      insert_usage_,
      db_->Prepare("INSERT INTO model_usage (tenant, conversation, thread, request_id, at_ms, api, "
                   "model, branch_id, status, input_tokens, cache_read_input_tokens, "
                   "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, "
                   "duration_ms, project, folds_new, folds_skipped, branch_view, "
                   "view_tokens_spared) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  ASSIGN_OR_RETURN(totals_by_tenant_, db_->Prepare(TotalsSql()));
  ASSIGN_OR_RETURN(totals_by_branch_,
                   db_->Prepare(absl::StrCat(TotalsSql(), " AND branch_id = ?")));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ConversationState>> SqliteConversationStore::Load(
    const ConversationKey& key) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // get_thread_ stays unreset until the rewrites are read: while it is active its read
  // transaction is open, so both queries see one snapshot even if another connection saves in
  // between (and no BEGIN is needed, which a group transaction open on this connection forbids).
  ResetOnExit reset_thread(get_thread_);
  get_thread_.Bind(1, key.tenant);
  get_thread_.Bind(2, key.conversation);
  get_thread_.Bind(3, key.thread);
  absl::StatusOr<bool> row = get_thread_.Step();
  if (!row.ok()) return AboutThread(key, row.status());
  if (!*row) return std::optional<ConversationState>();

  absl::StatusOr<ConversationState> state = ThreadFromRow(SqliteRow(get_thread_), key);
  if (!state.ok()) return state.status();

  ResetOnExit reset_rewrites(get_rewrites_);
  get_rewrites_.Bind(1, key.tenant);
  get_rewrites_.Bind(2, key.conversation);
  get_rewrites_.Bind(3, key.thread);
  for (;;) {
    absl::StatusOr<bool> next = get_rewrites_.Step();
    if (!next.ok()) return AboutThread(key, next.status());
    if (!*next) break;
    ASSIGN_OR_RETURN(Rewrite rewrite, RewriteFromRow(SqliteRow(get_rewrites_), key));
    state->rewrites.push_back(std::move(rewrite));
  }
  return std::optional<ConversationState>(*std::move(state));
}

absl::Status SqliteConversationStore::Save(const ConversationKey& key,
                                           const ConversationUpdate& update) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(AboutThread(key, db_->BeginWrite()));
  return AboutThread(key, db_->EndWrite(SaveLocked(key, update)));
}

absl::Status SqliteConversationStore::SaveLocked(const ConversationKey& key,
                                                 const ConversationUpdate& update) {
  {
    ResetOnExit reset(upsert_thread_);
    upsert_thread_.Bind(1, key.tenant);
    upsert_thread_.Bind(2, key.conversation);
    upsert_thread_.Bind(3, key.thread);
    upsert_thread_.BindBlob(4, EncodeFrontier(update.frontier));
    upsert_thread_.Bind(5, update.at_ms);
    RETURN_IF_ERROR(upsert_thread_.Run());
  }
  for (const Rewrite& r : update.new_rewrites) {
    ResetOnExit reset(insert_rewrite_);
    insert_rewrite_.Bind(1, key.tenant);
    insert_rewrite_.Bind(2, key.conversation);
    insert_rewrite_.Bind(3, key.thread);
    insert_rewrite_.Bind(4, static_cast<int64_t>(r.kind));
    insert_rewrite_.BindBlob(5, r.key);
    insert_rewrite_.BindBlob(6, r.value);
    absl::Status st = insert_rewrite_.Run();
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("rewrite of kind ", static_cast<int>(r.kind),
                                                  ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteConversationStore::RecordUsage(const UsageRecord& record) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status st = db_->EndWrite(RecordUsageLocked(record));
  if (!st.ok()) {
    return absl::Status(st.code(), absl::StrCat("usage of request ", record.request_id, " (",
                                                ThreadName(record.key), "): ", st.message()));
  }
  return st;
}

absl::Status SqliteConversationStore::RecordUsageLocked(const UsageRecord& record) {
  ResetOnExit reset(insert_usage_);
  insert_usage_.Bind(1, record.key.tenant);
  insert_usage_.Bind(2, record.key.conversation);
  insert_usage_.Bind(3, record.key.thread);
  insert_usage_.Bind(4, record.request_id);
  insert_usage_.Bind(5, record.at_ms);
  insert_usage_.Bind(6, record.api);
  insert_usage_.Bind(7, record.model);
  insert_usage_.Bind(8, record.branch_id);
  insert_usage_.Bind(9, static_cast<int64_t>(record.status));
  insert_usage_.Bind(10, record.input_tokens);
  insert_usage_.Bind(11, record.cache_read_input_tokens);
  insert_usage_.Bind(12, record.cache_creation_input_tokens);
  insert_usage_.Bind(13, record.output_tokens);
  insert_usage_.Bind(14, record.tokens_before);
  insert_usage_.Bind(15, record.tokens_after);
  insert_usage_.Bind(16, record.duration_ms);
  insert_usage_.Bind(17, record.project);
  insert_usage_.Bind(18, static_cast<int64_t>(record.folds_new));
  insert_usage_.Bind(19, EncodeFoldsSkipped(record.folds_skipped));
  insert_usage_.Bind(20, record.branch_view);
  insert_usage_.Bind(21, record.view_tokens_spared);
  return insert_usage_.Run();
}

absl::StatusOr<std::vector<ProjectUsage>> SqliteConversationStore::UsageByProject(
    std::string_view tenant, int64_t since_ms) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // Run rarely (a CLI): prepared per call.
  ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare(absl::StrCat(
          "SELECT ", kProjectUsageColumns,
          " FROM (SELECT tenant, project, 1 AS n, input_tokens, cache_read_input_tokens, "
          "cache_creation_input_tokens, "
          "output_tokens, tokens_before, tokens_after, at_ms, folds_new, CASE WHEN "
          "json_valid(folds_skipped) THEN (SELECT COALESCE(SUM(value), 0) FROM "
          "json_each(folds_skipped)) ELSE 0 END AS folds_skipped FROM model_usage "
          "WHERE (?1 = '' OR tenant = ?1) AND at_ms >= ?2 "
          // Days whose detail the retention sweep rolled up (decision 0031): whole days.
          "UNION ALL SELECT tenant, project, requests, input_tokens, cache_read_input_tokens, "
          "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, last_at_ms, "
          "folds_new, folds_skipped "
          "FROM model_usage_daily WHERE (?1 = '' OR tenant = ?1) AND (day + 1) * 86400000 > ?2"
          ") u GROUP BY tenant, project ORDER BY tenant, project")));
  ResetOnExit reset(st);
  st.Bind(1, tenant);
  st.Bind(2, since_ms);
  std::vector<ProjectUsage> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ProjectUsageFromRow(SqliteRow(st)));
  }
  return out;
}

absl::StatusOr<std::vector<model::ConversationSummary>>
SqliteConversationStore::RecentConversations(std::string_view tenant, int limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // Read by the viewer and `contextd status`, not per request: prepared per call. The project
  // is a bare column beside the only aggregate MAX(at_ms) of `l`, which SQLite takes from a row
  // holding the maximum (beside two aggregates it would come from any row).
  ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare("SELECT a.conversation, l.project, a.last_ms, a.first_ms, a.n, a.folds, a.tb, "
                   "a.ta, a.skipped, a.isolated, a.spared FROM (SELECT conversation, "
                   "MAX(at_ms) AS last_ms, "
                   "MIN(at_ms) AS first_ms, COUNT(*) AS n, SUM(folds_new) AS folds, "
                   "SUM(tokens_before) AS tb, SUM(tokens_after) AS ta, "
                   "group_concat(NULLIF(folds_skipped, ''), char(10)) AS skipped, "
                   "SUM(branch_view = 'isolated') AS isolated, "
                   "SUM(view_tokens_spared) AS spared "
                   "FROM model_usage WHERE tenant = ?1 GROUP BY conversation "
                   "ORDER BY last_ms DESC, conversation LIMIT ?2) a "
                   "JOIN (SELECT conversation, project, MAX(at_ms) FROM model_usage "
                   "WHERE tenant = ?1 GROUP BY conversation) l USING (conversation) "
                   "ORDER BY a.last_ms DESC, a.conversation"));
  ResetOnExit reset(st);
  st.Bind(1, tenant);
  st.Bind(2, static_cast<int64_t>(limit));
  std::vector<model::ConversationSummary> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ConversationSummaryFromRow(SqliteRow(st)));
  }
  return out;
}

absl::StatusOr<UsageTotals> SqliteConversationStore::Totals(std::string_view tenant,
                                                            std::string_view branch_id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  Statement& st = branch_id.empty() ? totals_by_tenant_ : totals_by_branch_;
  ResetOnExit reset(st);
  st.Bind(1, tenant);
  if (!branch_id.empty()) st.Bind(2, branch_id);
  // An aggregate without GROUP BY always yields one row.
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::InternalError("usage totals: the aggregate returned no row");
  UsageTotals t = UsageTotalsFromRow(SqliteRow(st));
  return t;
}

absl::StatusOr<model::BranchViewUsage> SqliteConversationStore::ViewUsage(
    std::string_view tenant, std::string_view branch_id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // Read by branch_status, not per request: prepared per call (model_usage_by_branch serves it).
  ASSIGN_OR_RETURN(Statement st, db_->Prepare(absl::StrCat(
                                     "SELECT ", kViewUsageColumns,
                                     " FROM model_usage WHERE tenant = ? AND branch_id = ?")));
  ResetOnExit reset(st);
  st.Bind(1, tenant);
  st.Bind(2, branch_id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::InternalError("branch view usage: the aggregate returned no row");
  return ViewUsageFromRow(SqliteRow(st));
}

}  // namespace contextd::store
