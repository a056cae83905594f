#include "store/postgres/pg_conversation_store.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/conversation_rows.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

using model::ConversationKey;
using model::ConversationState;
using model::Rewrite;

const std::string& TotalsSql() {
  static const std::string sql = absl::StrCat("SELECT ", kUsageTotalsColumns,
                                              " FROM model_usage WHERE tenant = $1 AND "
                                              "($2 = '' OR branch_id = $2)");
  return sql;
}

// Per (tenant, project) since $2, for tenant $1 ('' = all): the detail rows, and the days whose
// detail the retention sweep rolled up (decision 0031: whole days).
const std::string& ProjectUsageSql() {
  static const std::string sql = absl::StrCat(
      "SELECT ", kProjectUsageColumns,
      " FROM (SELECT tenant, project, 1 AS n, input_tokens, cache_read_input_tokens, "
      "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, at_ms, folds_new, "
      "(SELECT COALESCE(SUM(value::bigint), 0) FROM json_each_text(NULLIF("
      "model_usage.folds_skipped, '')::json)) AS folds_skipped FROM model_usage "
      "WHERE ($1 = '' OR tenant = $1) AND at_ms >= $2 "
      "UNION ALL SELECT tenant, project, requests, input_tokens, cache_read_input_tokens, "
      "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, last_at_ms, "
      "folds_new, folds_skipped FROM model_usage_daily WHERE ($1 = '' OR tenant = $1) AND "
      "(day + 1) * 86400000 > $2) u GROUP BY tenant, project ORDER BY tenant, project");
  return sql;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgConversationStore>> PgConversationStore::Open(
    const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

std::unique_ptr<PgConversationStore> PgConversationStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgConversationStore>(new PgConversationStore(std::move(db)));
}

absl::StatusOr<std::optional<ConversationState>> PgConversationStore::Load(
    const ConversationKey& key) {
  std::optional<ConversationState> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.reset();
    // One snapshot for both reads: a Save between them must not show half of itself.
    RETURN_IF_ERROR(c.ExecScript("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    auto body = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(PgResult t, c.Exec("SELECT frontier, requests, created_ms, last_ms FROM "
                                          "model_threads WHERE tenant = $1 AND conversation = "
                                          "$2 AND thread = $3",
                                          {key.tenant, key.conversation, key.thread}));
      if (t.rows() == 0) return absl::OkStatus();
      ASSIGN_OR_RETURN(ConversationState state, ThreadFromRow(PgRow(t, 0), key));
      ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT kind, key, value FROM model_rewrites WHERE "
                                          "tenant = $1 AND conversation = $2 AND thread = $3 "
                                          "ORDER BY seq",
                                          {key.tenant, key.conversation, key.thread}));
      for (int i = 0; i < r.rows(); ++i) {
        ASSIGN_OR_RETURN(Rewrite rewrite, RewriteFromRow(PgRow(r, i), key));
        state.rewrites.push_back(std::move(rewrite));
      }
      out = std::move(state);
      return absl::OkStatus();
    };
    absl::Status b = body();
    absl::Status end = c.ExecScript(b.ok() ? "COMMIT" : "ROLLBACK");
    return b.ok() ? end : b;
  });
  if (!st.ok()) {
    if (st.code() == absl::StatusCode::kInternal &&
        st.message().find(ThreadName(key)) != std::string_view::npos) {
      return st;
    }
    return AboutThread(key, st);
  }
  return out;
}

absl::Status PgConversationStore::Save(const ConversationKey& key,
                                       const model::ConversationUpdate& update) {
  return AboutThread(key, db_->Write([&](PgConn& c) -> absl::Status {
    RETURN_IF_ERROR(
        c.Exec("INSERT INTO model_threads (tenant, conversation, thread, frontier, requests, "
               "created_ms, last_ms) VALUES ($1, $2, $3, $4, 1, $5, $5) "
               "ON CONFLICT (tenant, conversation, thread) DO UPDATE SET "
               "frontier = excluded.frontier, requests = model_threads.requests + 1, "
               "last_ms = excluded.last_ms",
               {key.tenant, key.conversation, key.thread,
                PgParam::Bytes(EncodeFrontier(update.frontier)), update.at_ms})
            .status());
    for (const Rewrite& r : update.new_rewrites) {
      auto res = c.Exec(
          "INSERT INTO model_rewrites (tenant, conversation, thread, kind, key, value) "
          "VALUES ($1, $2, $3, $4, $5, $6) "
          "ON CONFLICT (tenant, conversation, thread, kind, key) DO NOTHING",
          {key.tenant, key.conversation, key.thread, static_cast<int64_t>(r.kind),
           PgParam::Bytes(r.key), PgParam::Bytes(r.value)});
      if (!res.ok()) {
        return absl::Status(res.status().code(),
                            absl::StrCat("rewrite of kind ", static_cast<int>(r.kind), ": ",
                                         res.status().message()));
      }
    }
    return absl::OkStatus();
  }));
}

absl::Status PgConversationStore::RecordUsage(const model::UsageRecord& record) {
  absl::Status st = db_->Write([&](PgConn& c) -> absl::Status {
    return c
        .Exec(
            "INSERT INTO model_usage (tenant, conversation, thread, request_id, at_ms, api, "
            "model, branch_id, status, input_tokens, cache_read_input_tokens, "
            "cache_creation_input_tokens, output_tokens, tokens_before, tokens_after, "
            "duration_ms, project, folds_new, folds_skipped, branch_view, view_tokens_spared) "
            "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,"
            "$21)",
            {record.key.tenant,
             record.key.conversation,
             record.key.thread,
             record.request_id,
             record.at_ms,
             record.api,
             record.model,
             record.branch_id,
             record.status,
             record.input_tokens,
             record.cache_read_input_tokens,
             record.cache_creation_input_tokens,
             record.output_tokens,
             record.tokens_before,
             record.tokens_after,
             record.duration_ms,
             record.project,
             static_cast<int64_t>(record.folds_new),
             EncodeFoldsSkipped(record.folds_skipped),
             record.branch_view,
             record.view_tokens_spared})
        .status();
  });
  if (!st.ok()) {
    return absl::Status(st.code(), absl::StrCat("usage of request ", record.request_id, " (",
                                                ThreadName(record.key), "): ", st.message()));
  }
  return st;
}

absl::StatusOr<model::UsageTotals> PgConversationStore::Totals(std::string_view tenant,
                                                               std::string_view branch_id) {
  model::UsageTotals t;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec(TotalsSql(), {tenant, branch_id}));
    t = UsageTotalsFromRow(PgRow(r, 0));
    return absl::OkStatus();
  }));
  return t;
}

absl::StatusOr<model::BranchViewUsage> PgConversationStore::ViewUsage(std::string_view tenant,
                                                                      std::string_view branch_id) {
  model::BranchViewUsage u;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", kViewUsageColumns,
                                                     " FROM model_usage WHERE tenant = $1 AND "
                                                     "branch_id = $2"),
                                        {tenant, branch_id}));
    u = ViewUsageFromRow(PgRow(r, 0));
    return absl::OkStatus();
  }));
  return u;
}

absl::StatusOr<std::vector<model::ConversationSummary>> PgConversationStore::RecentConversations(
    std::string_view tenant, int limit) {
  std::vector<model::ConversationSummary> out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(
        PgResult r, c.Exec("SELECT conversation, (array_agg(project ORDER BY at_ms DESC, seq))[1], "
                           "MAX(at_ms), MIN(at_ms), COUNT(*), SUM(folds_new), SUM(tokens_before), "
                           "SUM(tokens_after), string_agg(NULLIF(folds_skipped, ''), E'\\n'), "
                           "COUNT(*) FILTER (WHERE branch_view = 'isolated'), "
                           "SUM(view_tokens_spared) "
                           "FROM model_usage WHERE tenant = $1 GROUP BY conversation "
                           "ORDER BY MAX(at_ms) DESC, conversation COLLATE \"C\" LIMIT $2",
                           {tenant, static_cast<int64_t>(limit)}));
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(ConversationSummaryFromRow(PgRow(r, i)));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<ProjectUsage>> PgConversationStore::UsageByProject(
    std::string_view tenant, int64_t since_ms) {
  std::vector<ProjectUsage> out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r, c.Exec(ProjectUsageSql(), {tenant, since_ms}));
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(ProjectUsageFromRow(PgRow(r, i)));
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace contextd::store
