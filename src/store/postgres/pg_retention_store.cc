#include "store/postgres/pg_retention_store.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Cutoff(int64_t now_ms, int64_t window_ms) { return window_ms > 0 ? now_ms - window_ms : 0; }

constexpr char kLastActivity[] =
    "SELECT COALESCE(MAX(t), 0) FROM (SELECT GREATEST(created_at_ms, COALESCE(folded_at_ms, 0)) "
    "AS t FROM trail_scopes WHERE root_id = $1 UNION ALL SELECT (SELECT e.at_ms FROM "
    "trail_events e WHERE e.scope_id = s.id ORDER BY e.seq DESC LIMIT 1) FROM trail_scopes s "
    "WHERE s.root_id = $1) a";

// A text[] literal of hex hashes (no quoting needed).
std::string HashArray(const std::vector<std::string>& hashes) {
  return absl::StrCat("{", absl::StrJoin(hashes, ","), "}");
}

}  // namespace

class PgRetentionStore::Sweeper {
 public:
  Sweeper(PgDatabase& db, const RetentionPolicy& policy, int64_t now_ms)
      : db_(db), policy_(policy), now_ms_(now_ms) {}

  absl::StatusOr<RetentionReport> Run() {
    const auto start = Clock::now();
    if (policy_.trail_ms > 0) RETURN_IF_ERROR(SweepTrail());
    if (policy_.usage_detail_ms > 0 && !report_.skipped) RETURN_IF_ERROR(SweepUsage());
    if (policy_.conversation_ms > 0 && !report_.skipped) RETURN_IF_ERROR(SweepConversations());
    if (policy_.memory_history_ms > 0 && !report_.skipped) RETURN_IF_ERROR(SweepMemoryHistory());
    report_.elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return report_;
  }

 private:
  // One batch: a transaction holding the sweep's advisory lock. False when another instance
  // holds it (the sweep stops: skipped).
  absl::StatusOr<bool> Batch(const std::function<absl::Status(PgConn&)>& body) {
    const auto start = Clock::now();
    bool locked = false;
    RETURN_IF_ERROR(db_.Write([&](PgConn& c) -> absl::Status {
      ASSIGN_OR_RETURN(PgResult r,
                       c.Exec("SELECT pg_try_advisory_xact_lock($1)", {kRetentionLockKey}));
      locked = r.rows() == 1 && r.Bool(0, 0);
      if (!locked) return absl::OkStatus();
      return body(c);
    }));
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    ++report_.batches;
    report_.batch_us_total += us;
    report_.batch_us_max = std::max(report_.batch_us_max, us);
    if (!locked) report_.skipped = true;
    if (policy_.pause_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(policy_.pause_us));
    return locked;
  }

  absl::StatusOr<PgResult> Query(std::string_view sql, const std::vector<PgParam>& params) {
    PgResult out;
    RETURN_IF_ERROR(db_.Read([&](PgConn& c) -> absl::Status {
      ASSIGN_OR_RETURN(out, c.Exec(sql, params));
      return absl::OkStatus();
    }));
    return out;
  }

  absl::Status SweepTrail() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.trail_ms);
    int64_t after = 0;
    while (!report_.skipped) {
      ASSIGN_OR_RETURN(PgResult roots,
                       Query("SELECT s.pos, s.id FROM trail_scopes s WHERE s.kind = 'session' "
                             "AND s.pos > $1 AND s.created_at_ms < $2 AND NOT EXISTS (SELECT 1 "
                             "FROM mcp_sessions m WHERE m.id = s.session_id AND m.ended_ms IS "
                             "NULL AND m.last_seen_ms >= $2) ORDER BY s.pos LIMIT 100",
                             {after, cutoff}));
      if (roots.rows() == 0) return absl::OkStatus();
      for (int i = 0; i < roots.rows() && !report_.skipped; ++i) {
        after = roots.Int(i, 0);
        const std::string id = roots.Text(i, 1);
        ASSIGN_OR_RETURN(PgResult last, Query(kLastActivity, {id}));
        if (last.Int(0, 0) >= cutoff) continue;
        ++report_.sessions.rows;
        RETURN_IF_ERROR(policy_.dry_run ? CountSession(id) : DeleteSession(id, cutoff));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CountSession(const std::string& id) {
    ASSIGN_OR_RETURN(PgResult r,
                     Query("SELECT (SELECT COUNT(*) FROM trail_scopes WHERE root_id = $1), "
                           "(SELECT COUNT(*) FROM trail_events WHERE scope_id IN (SELECT id FROM "
                           "trail_scopes WHERE root_id = $1))",
                           {id}));
    report_.scopes.rows += r.Int(0, 0);
    report_.events.rows += r.Int(0, 1);
    return absl::OkStatus();
  }

  // Events first (with the blobs they leave unreferenced, in the same transaction), then the
  // scopes, newest first (a scope's children are newer than it), batch by batch.
  absl::Status DeleteSession(const std::string& id, int64_t cutoff) {
    bool done = false;
    while (!done) {
      ASSIGN_OR_RETURN(
          bool locked, Batch([&](PgConn& c) -> absl::Status {
            ASSIGN_OR_RETURN(PgResult last, c.Exec(kLastActivity, {id}));
            if (last.Int(0, 0) >= cutoff) {
              done = true;
              return absl::OkStatus();
            }
            ASSIGN_OR_RETURN(PgResult events,
                             c.Exec("DELETE FROM trail_events WHERE seq IN (SELECT seq FROM "
                                    "trail_events WHERE scope_id IN (SELECT id FROM trail_scopes "
                                    "WHERE root_id = $1) LIMIT $2) RETURNING blob_hash",
                                    {id, policy_.batch_rows}));
            report_.events.rows += events.rows();
            if (events.rows() > 0) {
              std::vector<std::string> hashes;
              for (int i = 0; i < events.rows(); ++i) hashes.push_back(events.Text(i, 0));
              std::sort(hashes.begin(), hashes.end());
              hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
              // FOR UPDATE of the blob rows first: an event inserted meanwhile waits for this
              // transaction (its foreign key check locks the blob row) or is seen by NOT EXISTS.
              ASSIGN_OR_RETURN(PgResult blobs,
                               c.Exec("DELETE FROM trail_blobs b WHERE b.hash IN (SELECT hash FROM "
                                      "trail_blobs WHERE hash = ANY($1::text[]) ORDER BY hash FOR "
                                      "UPDATE) AND NOT EXISTS (SELECT 1 FROM trail_events e WHERE "
                                      "e.blob_hash = b.hash) RETURNING size",
                                      {HashArray(hashes)}));
              report_.blobs.rows += blobs.rows();
              for (int i = 0; i < blobs.rows(); ++i) report_.blobs.bytes += blobs.Int(i, 0);
            }
            if (events.rows() == policy_.batch_rows) return absl::OkStatus();
            ASSIGN_OR_RETURN(PgResult scopes,
                             c.Exec("DELETE FROM trail_scopes WHERE pos IN (SELECT pos FROM "
                                    "trail_scopes WHERE root_id = $1 ORDER BY pos DESC LIMIT $2)",
                                    {id, policy_.batch_rows - events.rows()}));
            report_.scopes.rows += scopes.affected();
            done = scopes.affected() == 0 && events.rows() == 0;
            return absl::OkStatus();
          }));
      if (!locked) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  absl::Status SweepUsage() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.usage_detail_ms);
    if (policy_.dry_run) {
      ASSIGN_OR_RETURN(PgResult r,
                       Query("SELECT COUNT(*), COUNT(DISTINCT (tenant, project, at_ms / "
                             "86400000)) FROM model_usage WHERE at_ms < $1",
                             {cutoff}));
      report_.usage_rows.rows = r.Int(0, 0);
      report_.usage_days = r.Int(0, 1);
      return absl::OkStatus();
    }
    while (true) {
      int64_t n = 0;
      ASSIGN_OR_RETURN(
          bool locked, Batch([&](PgConn& c) -> absl::Status {
            ASSIGN_OR_RETURN(
                PgResult r,
                c.Exec(
                    "WITH gone AS (DELETE FROM model_usage WHERE seq IN (SELECT seq FROM "
                    "model_usage WHERE at_ms < $1 ORDER BY seq LIMIT $2) RETURNING *), "
                    "days AS (INSERT INTO model_usage_daily AS d (tenant, project, day, requests, "
                    "input_tokens, cache_read_input_tokens, cache_creation_input_tokens, "
                    "output_tokens, tokens_before, tokens_after, duration_ms, last_at_ms, "
                    "folds_new, folds_skipped) SELECT "
                    "tenant, project, at_ms / 86400000, COUNT(*), SUM(input_tokens), "
                    "SUM(cache_read_input_tokens), SUM(cache_creation_input_tokens), "
                    "SUM(output_tokens), SUM(tokens_before), SUM(tokens_after), SUM(duration_ms), "
                    "MAX(at_ms), SUM(folds_new), SUM(skips.n) FROM gone, LATERAL (SELECT "
                    "COALESCE(SUM(value::bigint), 0) AS n FROM "
                    "json_each_text(NULLIF(gone.folds_skipped, '')::json)) skips "
                    "GROUP BY tenant, project, at_ms / 86400000 ON CONFLICT "
                    "(tenant, project, day) DO UPDATE SET requests = d.requests + "
                    "excluded.requests, input_tokens = d.input_tokens + excluded.input_tokens, "
                    "cache_read_input_tokens = d.cache_read_input_tokens + "
                    "excluded.cache_read_input_tokens, cache_creation_input_tokens = "
                    "d.cache_creation_input_tokens + excluded.cache_creation_input_tokens, "
                    "output_tokens = d.output_tokens + excluded.output_tokens, tokens_before = "
                    "d.tokens_before + excluded.tokens_before, tokens_after = d.tokens_after + "
                    "excluded.tokens_after, duration_ms = d.duration_ms + excluded.duration_ms, "
                    "last_at_ms = GREATEST(d.last_at_ms, excluded.last_at_ms), folds_new = "
                    "d.folds_new + excluded.folds_new, folds_skipped = d.folds_skipped + "
                    "excluded.folds_skipped RETURNING 1) "
                    "SELECT (SELECT COUNT(*) FROM gone), (SELECT COUNT(*) FROM days)",
                    {cutoff, policy_.batch_rows}));
            n = r.Int(0, 0);
            report_.usage_rows.rows += n;
            report_.usage_days += r.Int(0, 1);
            return absl::OkStatus();
          }));
      if (!locked || n < policy_.batch_rows) return absl::OkStatus();
    }
  }

  absl::Status SweepConversations() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.conversation_ms);
    if (policy_.dry_run) {
      ASSIGN_OR_RETURN(PgResult r,
                       Query("SELECT (SELECT COUNT(*) FROM model_threads WHERE last_ms < $1), "
                             "COUNT(*), COALESCE(SUM(length(r.key) + length(r.value)), 0) FROM "
                             "model_rewrites r JOIN model_threads t USING (tenant, conversation, "
                             "thread) WHERE t.last_ms < $1",
                             {cutoff}));
      report_.threads.rows = r.Int(0, 0);
      report_.rewrites.rows = r.Int(0, 1);
      report_.rewrites.bytes = r.Int(0, 2);
      return absl::OkStatus();
    }
    while (true) {
      int64_t n = 0;
      ASSIGN_OR_RETURN(
          bool locked, Batch([&](PgConn& c) -> absl::Status {
            // The threads and their decisions go together; a thread seen meanwhile is locked by its
            // Save's upsert or has a new last_ms, and stays.
            ASSIGN_OR_RETURN(
                PgResult r,
                c.Exec(
                    "WITH t AS (DELETE FROM model_threads WHERE (tenant, conversation, thread) IN "
                    "(SELECT tenant, conversation, thread FROM model_threads WHERE last_ms < $1 "
                    "LIMIT $2 FOR UPDATE SKIP LOCKED) AND last_ms < $1 RETURNING tenant, "
                    "conversation, thread), w AS (DELETE FROM model_rewrites r USING t WHERE "
                    "r.tenant = t.tenant AND r.conversation = t.conversation AND r.thread = "
                    "t.thread RETURNING length(r.key) + length(r.value) AS b) SELECT (SELECT "
                    "COUNT(*) FROM t), (SELECT COUNT(*) FROM w), (SELECT COALESCE(SUM(b), 0) FROM "
                    "w)",
                    {cutoff, std::max<int64_t>(1, policy_.batch_rows / 50)}));
            n = r.Int(0, 0);
            report_.threads.rows += n;
            report_.rewrites.rows += r.Int(0, 1);
            report_.rewrites.bytes += r.Int(0, 2);
            return absl::OkStatus();
          }));
      if (!locked || n == 0) return absl::OkStatus();
    }
  }

  absl::Status SweepMemoryHistory() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.memory_history_ms);
    constexpr char kOld[] =
        "FROM memory_history h WHERE h.at_ms < $1 AND h.seq < (SELECT MAX(m.seq) FROM "
        "memory_history m WHERE m.memory_id = h.memory_id)";
    if (policy_.dry_run) {
      ASSIGN_OR_RETURN(PgResult r, Query(absl::StrCat("SELECT COUNT(*) ", kOld), {cutoff}));
      report_.memory_history.rows = r.Int(0, 0);
      return absl::OkStatus();
    }
    while (true) {
      int64_t n = 0;
      ASSIGN_OR_RETURN(bool locked, Batch([&](PgConn& c) -> absl::Status {
                         ASSIGN_OR_RETURN(
                             PgResult r,
                             c.Exec(absl::StrCat("DELETE FROM memory_history WHERE seq IN (SELECT "
                                                 "h.seq ",
                                                 kOld, " ORDER BY h.seq LIMIT $2)"),
                                    {cutoff, policy_.batch_rows}));
                         n = r.affected();
                         report_.memory_history.rows += n;
                         return absl::OkStatus();
                       }));
      if (!locked || n < policy_.batch_rows) return absl::OkStatus();
    }
  }

  PgDatabase& db_;
  const RetentionPolicy& policy_;
  const int64_t now_ms_;
  RetentionReport report_;
};

absl::StatusOr<std::unique_ptr<PgRetentionStore>> PgRetentionStore::Open(const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

std::unique_ptr<PgRetentionStore> PgRetentionStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgRetentionStore>(new PgRetentionStore(std::move(db)));
}

absl::StatusOr<RetentionReport> PgRetentionStore::Sweep(const RetentionPolicy& policy,
                                                        int64_t now_ms) {
  Sweeper sweeper(*db_, policy, now_ms);
  return sweeper.Run();
}

absl::StatusOr<RetentionKept> PgRetentionStore::Kept() {
  RetentionKept k;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("SELECT (SELECT COUNT(*) FROM trail_scopes), (SELECT COUNT(*) FROM trail_events), "
               "(SELECT COUNT(*) FROM trail_blobs), (SELECT COALESCE(SUM(size), 0) FROM "
               "trail_blobs), (SELECT COUNT(*) FROM model_usage), (SELECT COUNT(*) FROM "
               "model_usage_daily), (SELECT COUNT(*) FROM model_threads), (SELECT COUNT(*) FROM "
               "model_rewrites), (SELECT COALESCE(SUM(length(key) + length(value)), 0) FROM "
               "model_rewrites), (SELECT COUNT(*) FROM memory_history), (SELECT "
               "COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
               "pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = "
               "current_schema())"));
    int64_t* fields[] = {&k.scopes,        &k.events,         &k.blobs,         &k.blob_bytes,
                         &k.usage_rows,    &k.usage_days,     &k.threads,       &k.rewrites,
                         &k.rewrite_bytes, &k.memory_history, &k.database_bytes};
    for (int i = 0; i < 11; ++i) *fields[i] = r.Int(0, i);
    return absl::OkStatus();
  }));
  return k;
}

}  // namespace contextd::store
