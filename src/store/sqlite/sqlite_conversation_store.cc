#include "store/sqlite/sqlite_conversation_store.h"

#include <cstdint>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

using model::ConversationKey;
using model::ConversationState;
using model::ConversationUpdate;
using model::Rewrite;
using model::RewriteKind;
using model::UsageRecord;
using model::UsageTotals;

// A varint of a 64-bit value takes at most 10 bytes.
constexpr int kMaxVarintBytes = 10;

constexpr char kTotalsColumns[] =
    "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(cache_read_input_tokens), 0), "
    "COALESCE(SUM(cache_creation_input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
    "COALESCE(SUM(tokens_before), 0), COALESCE(SUM(tokens_after), 0), COALESCE(MAX(at_ms), 0) "
    "FROM model_usage WHERE tenant = ?";

std::string ThreadName(const ConversationKey& key) {
  return absl::StrCat("model thread ", key.tenant, "/", key.conversation, "/", key.thread);
}

// Prefixes a failed status's message with the thread it concerns.
absl::Status About(const ConversationKey& key, const absl::Status& st) {
  if (st.ok()) return st;
  return absl::Status(st.code(), absl::StrCat(ThreadName(key), ": ", st.message()));
}

bool IsRewriteKind(int64_t kind) {
  return kind == static_cast<int64_t>(RewriteKind::kBlock) ||
         kind == static_cast<int64_t>(RewriteKind::kAppend) ||
         kind == static_cast<int64_t>(RewriteKind::kFold) ||
         kind == static_cast<int64_t>(RewriteKind::kAutoFold);
}

}  // namespace

std::string EncodeFrontier(const std::vector<std::string>& hashes) {
  std::string out;
  for (const std::string& h : hashes) {
    uint64_t n = h.size();
    while (n >= 0x80) {
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    out.push_back(static_cast<char>(n));
    out.append(h);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeFrontier(std::string_view blob) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < blob.size()) {
    const size_t start = pos;
    uint64_t len = 0;
    int shift = 0;
    bool done = false;
    for (int i = 0; i < kMaxVarintBytes && pos < blob.size(); ++i) {
      const auto byte = static_cast<uint8_t>(blob[pos++]);
      const uint64_t bits = byte & 0x7f;
      // The tenth byte may carry only the top bit of a 64-bit value.
      if (shift == 63 && bits > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("frontier entry ", out.size(), " at byte ", start, ": length overflows"));
      }
      len |= bits << shift;
      shift += 7;
      if ((byte & 0x80) == 0) {
        done = true;
        break;
      }
    }
    if (!done) {
      return absl::InvalidArgumentError(absl::StrCat("frontier entry ", out.size(), " at byte ",
                                                     start, ": truncated or over-long length"));
    }
    if (len > blob.size() - pos) {
      return absl::InvalidArgumentError(absl::StrCat("frontier entry ", out.size(), " at byte ",
                                                     start, ": length ", len, " exceeds the ",
                                                     blob.size() - pos, " bytes left"));
    }
    out.emplace_back(blob.substr(pos, static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
  }
  return out;
}

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
                   "duration_ms, project, folds_new, folds_skipped) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  ASSIGN_OR_RETURN(totals_by_tenant_, db_->Prepare(kTotalsColumns));
  ASSIGN_OR_RETURN(totals_by_branch_,
                   db_->Prepare(absl::StrCat(kTotalsColumns, " AND branch_id = ?")));
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
  if (!row.ok()) return About(key, row.status());
  if (!*row) return std::optional<ConversationState>();

  ConversationState state;
  absl::StatusOr<std::vector<std::string>> frontier = DecodeFrontier(get_thread_.Blob(0));
  if (!frontier.ok()) {
    return absl::InternalError(
        absl::StrCat(ThreadName(key), ": corrupt frontier: ", frontier.status().message()));
  }
  state.frontier = *std::move(frontier);
  state.requests = get_thread_.Int(1);
  state.created_ms = get_thread_.Int(2);
  state.last_ms = get_thread_.Int(3);

  ResetOnExit reset_rewrites(get_rewrites_);
  get_rewrites_.Bind(1, key.tenant);
  get_rewrites_.Bind(2, key.conversation);
  get_rewrites_.Bind(3, key.thread);
  for (;;) {
    absl::StatusOr<bool> next = get_rewrites_.Step();
    if (!next.ok()) return About(key, next.status());
    if (!*next) break;
    const int64_t kind = get_rewrites_.Int(0);
    if (!IsRewriteKind(kind)) {
      return absl::InternalError(absl::StrCat(ThreadName(key), ": rewrite of unknown kind ", kind));
    }
    state.rewrites.push_back(
        Rewrite{static_cast<RewriteKind>(kind), get_rewrites_.Blob(1), get_rewrites_.Blob(2)});
  }
  return std::optional<ConversationState>(std::move(state));
}

absl::Status SqliteConversationStore::Save(const ConversationKey& key,
                                           const ConversationUpdate& update) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(About(key, db_->BeginWrite()));
  return About(key, db_->EndWrite(SaveLocked(key, update)));
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
  return insert_usage_.Run();
}

absl::StatusOr<std::vector<ProjectUsage>> SqliteConversationStore::UsageByProject(
    std::string_view tenant, int64_t since_ms) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // Run rarely (a CLI): prepared per call.
  ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare(
          "SELECT tenant, project, SUM(n), COALESCE(SUM(input_tokens), 0), "
          "COALESCE(SUM(cache_read_input_tokens), 0), "
          "COALESCE(SUM(cache_creation_input_tokens), 0), "
          "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(tokens_before), 0), "
          "COALESCE(SUM(tokens_after), 0), COALESCE(MAX(at_ms), 0), "
          "COALESCE(SUM(folds_new), 0), COALESCE(SUM(folds_skipped), 0) FROM (SELECT tenant, "
          "project, 1 AS n, input_tokens, cache_read_input_tokens, cache_creation_input_tokens, "
          "output_tokens, tokens_before, tokens_after, at_ms, folds_new, CASE WHEN "
          "json_valid(folds_skipped) THEN (SELECT COALESCE(SUM(value), 0) FROM "
          "json_each(folds_skipped)) ELSE 0 END AS folds_skipped FROM model_usage "
          "WHERE (?1 = '' OR tenant = ?1) AND at_ms >= ?2 "
          // Days whose detail the retention sweep rolled up (decision 0031): whole days.
          "UNION ALL SELECT tenant, project, requests, input_tokens, cache_read_input_tokens, "
          "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, last_at_ms, "
          "folds_new, folds_skipped "
          "FROM model_usage_daily WHERE (?1 = '' OR tenant = ?1) AND (day + 1) * 86400000 > ?2"
          ") u GROUP BY tenant, project ORDER BY tenant, project"));
  ResetOnExit reset(st);
  st.Bind(1, tenant);
  st.Bind(2, since_ms);
  std::vector<ProjectUsage> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ProjectUsage u;
    u.tenant = st.Text(0);
    u.project = st.Text(1);
    u.totals.requests = st.Int(2);
    u.totals.input_tokens = st.Int(3);
    u.totals.cache_read_input_tokens = st.Int(4);
    u.totals.cache_creation_input_tokens = st.Int(5);
    u.totals.output_tokens = st.Int(6);
    u.totals.tokens_before = st.Int(7);
    u.totals.tokens_after = st.Int(8);
    u.totals.last_at_ms = st.Int(9);
    u.folds_new = st.Int(10);
    u.folds_skipped = st.Int(11);
    out.push_back(std::move(u));
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
                   "a.ta, a.skipped FROM (SELECT conversation, MAX(at_ms) AS last_ms, "
                   "MIN(at_ms) AS first_ms, COUNT(*) AS n, SUM(folds_new) AS folds, "
                   "SUM(tokens_before) AS tb, SUM(tokens_after) AS ta, "
                   "group_concat(NULLIF(folds_skipped, ''), char(10)) AS skipped "
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
    model::ConversationSummary c;
    c.conversation = st.Text(0);
    c.project = st.Text(1);
    c.last_at_ms = st.Int(2);
    c.first_at_ms = st.Int(3);
    c.requests = st.Int(4);
    c.folds_new = st.Int(5);
    c.tokens_before = st.Int(6);
    c.tokens_after = st.Int(7);
    if (!st.IsNull(8)) MergeFoldsSkipped(st.Text(8), c.folds_skipped);
    out.push_back(std::move(c));
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
  UsageTotals t;
  t.requests = st.Int(0);
  t.input_tokens = st.Int(1);
  t.cache_read_input_tokens = st.Int(2);
  t.cache_creation_input_tokens = st.Int(3);
  t.output_tokens = st.Int(4);
  t.tokens_before = st.Int(5);
  t.tokens_after = st.Int(6);
  t.last_at_ms = st.Int(7);
  return t;
}

}  // namespace contextd::store
