#include "store/sqlite/sqlite_retention_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

using Clock = std::chrono::steady_clock;

// Batches between two checkpoints of the sweep's own WAL frames.
constexpr int64_t kCheckpointEvery = 8;

int64_t Cutoff(int64_t now_ms, int64_t window_ms) { return window_ms > 0 ? now_ms - window_ms : 0; }

// The newest activity of a session's trail: a scope opened or folded, an event appended.
constexpr char kLastActivity[] =
    "SELECT MAX(t) FROM (SELECT MAX(created_at_ms, COALESCE(folded_at_ms, 0)) AS t "
    "FROM trail_scopes WHERE root_id = ?1 UNION ALL SELECT (SELECT e.at_ms FROM trail_events e "
    "WHERE e.scope_id = s.id ORDER BY e.seq DESC LIMIT 1) FROM trail_scopes s "
    "WHERE s.root_id = ?1)";

}  // namespace

// One sweep: the statements and the counters. Holds the database's mutex throughout (the
// connection is the sweep's own; only Kept and another Sweep wait for it).
class SqliteRetentionStore::Sweeper {
 public:
  Sweeper(Database& db, const RetentionPolicy& policy, int64_t now_ms)
      : db_(db), policy_(policy), now_ms_(now_ms) {}

  absl::StatusOr<RetentionReport> Run() {
    const auto start = Clock::now();
    if (policy_.trail_ms > 0) {
      RETURN_IF_ERROR(SweepTrail());
      if (!policy_.dry_run) RETURN_IF_ERROR(SweepBlobs());
    }
    if (policy_.usage_detail_ms > 0) RETURN_IF_ERROR(SweepUsage());
    if (policy_.conversation_ms > 0) RETURN_IF_ERROR(SweepConversations());
    if (policy_.memory_history_ms > 0) RETURN_IF_ERROR(SweepMemoryHistory());
    if (!policy_.dry_run) RETURN_IF_ERROR(Vacuum());
    report_.elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    return report_;
  }

 private:
  // Runs `body` as one write transaction (a batch), timed; pauses after it so that the
  // engine's writer, waiting for the lock, goes first.
  absl::Status Batch(const std::function<absl::Status()>& body) {
    const auto start = Clock::now();
    RETURN_IF_ERROR(db_.BeginWrite());
    absl::Status st = db_.EndWrite(body());
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    ++report_.batches;
    report_.batch_us_total += us;
    report_.batch_us_max = std::max(report_.batch_us_max, us);
    if (report_.batches % kCheckpointEvery == 0) {
      // Copies this sweep's frames back (no write lock: writers go on meanwhile); BUSY when the
      // engine's checkpointer is running, which copies them as well.
      db_.Exec("PRAGMA wal_checkpoint(PASSIVE)").IgnoreError();
    }
    if (policy_.pause_us > 0) {
      db_.mutex().unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(policy_.pause_us));
      db_.mutex().lock();
    }
    return st;
  }

  absl::StatusOr<int64_t> ScalarInt(Statement& st) {
    ResetOnExit reset(st);
    ASSIGN_OR_RETURN(bool row, st.Step());
    return row && !st.IsNull(0) ? st.Int(0) : 0;
  }

  // Whether the session of root `id` (MCP session `session_id`) was active since `cutoff`.
  absl::StatusOr<bool> Recent(const std::string& id, const std::string& session_id,
                              int64_t cutoff) {
    ASSIGN_OR_RETURN(Statement last, db_.Prepare(kLastActivity));
    last.Bind(1, id);
    ASSIGN_OR_RETURN(int64_t at, ScalarInt(last));
    if (at >= cutoff) return true;
    ASSIGN_OR_RETURN(Statement seen,
                     db_.Prepare("SELECT last_seen_ms FROM mcp_sessions WHERE id = ?1 AND "
                                 "ended_ms IS NULL"));
    seen.Bind(1, session_id);
    ASSIGN_OR_RETURN(int64_t seen_ms, ScalarInt(seen));
    return seen_ms >= cutoff;
  }

  absl::Status SweepTrail() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.trail_ms);
    ASSIGN_OR_RETURN(Statement roots,
                     db_.Prepare("SELECT pos, id, session_id FROM trail_scopes WHERE kind = "
                                 "'session' AND pos > ?1 AND created_at_ms < ?2 ORDER BY pos "
                                 "LIMIT 100"));
    int64_t after = 0;
    while (true) {
      std::vector<std::pair<std::string, std::string>> page;
      {
        ResetOnExit reset(roots);
        roots.Bind(1, after);
        roots.Bind(2, cutoff);
        while (true) {
          ASSIGN_OR_RETURN(bool row, roots.Step());
          if (!row) break;
          after = roots.Int(0);
          page.emplace_back(roots.Text(1), roots.Text(2));
        }
      }
      if (page.empty()) return absl::OkStatus();
      for (const auto& [id, session_id] : page) {
        ASSIGN_OR_RETURN(bool recent, Recent(id, session_id, cutoff));
        if (recent) continue;
        ++report_.sessions.rows;
        RETURN_IF_ERROR(policy_.dry_run ? CountSession(id) : DeleteSession(id, cutoff));
      }
    }
  }

  absl::Status CountSession(const std::string& id) {
    ASSIGN_OR_RETURN(Statement st,
                     db_.Prepare("SELECT (SELECT COUNT(*) FROM trail_scopes WHERE root_id = ?1), "
                                 "(SELECT COUNT(*) FROM trail_events WHERE scope_id IN (SELECT id "
                                 "FROM trail_scopes WHERE root_id = ?1))"));
    st.Bind(1, id);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      report_.scopes.rows += st.Int(0);
      report_.events.rows += st.Int(1);
    }
    return absl::OkStatus();
  }

  // Deletes session root `id`'s events (their blobs become candidates), then its scopes (each
  // noted in trail_fts_log, so that the search index drops it), batch by batch. A batch first
  // checks that nothing was added to the session since it was judged idle.
  absl::Status DeleteSession(const std::string& id, int64_t cutoff) {
    ASSIGN_OR_RETURN(Statement events,
                     db_.Prepare("SELECT seq, blob_hash FROM trail_events WHERE scope_id IN "
                                 "(SELECT id FROM trail_scopes WHERE root_id = ?1) LIMIT ?2"));
    ASSIGN_OR_RETURN(Statement del_event, db_.Prepare("DELETE FROM trail_events WHERE seq = ?1"));
    ASSIGN_OR_RETURN(Statement candidate,
                     db_.Prepare("INSERT OR IGNORE INTO retention_blob_candidates (hash) "
                                 "VALUES (?1)"));
    ASSIGN_OR_RETURN(Statement scopes,
                     db_.Prepare("SELECT pos FROM trail_scopes WHERE root_id = ?1 ORDER BY pos "
                                 "DESC LIMIT ?2"));
    ASSIGN_OR_RETURN(Statement del_scope, db_.Prepare("DELETE FROM trail_scopes WHERE pos = ?1"));
    ASSIGN_OR_RETURN(Statement log, db_.Prepare("INSERT INTO trail_fts_log (pos) VALUES (?1)"));
    ASSIGN_OR_RETURN(Statement last, db_.Prepare(kLastActivity));
    bool done = false;
    while (!done) {
      absl::Status batch = Batch([&]() -> absl::Status {
        last.Bind(1, id);
        ASSIGN_OR_RETURN(int64_t at, ScalarInt(last));
        if (at >= cutoff) {  // the session came back
          done = true;
          return absl::OkStatus();
        }
        std::vector<std::pair<int64_t, std::string>> rows;
        {
          ResetOnExit reset(events);
          events.Bind(1, id);
          events.Bind(2, policy_.batch_rows);
          while (true) {
            ASSIGN_OR_RETURN(bool row, events.Step());
            if (!row) break;
            rows.emplace_back(events.Int(0), events.Text(1));
          }
        }
        for (const auto& [seq, hash] : rows) {
          ResetOnExit r1(del_event), r2(candidate);
          del_event.Bind(1, seq);
          RETURN_IF_ERROR(del_event.Run());
          candidate.Bind(1, hash);
          RETURN_IF_ERROR(candidate.Run());
        }
        report_.events.rows += static_cast<int64_t>(rows.size());
        if (static_cast<int64_t>(rows.size()) == policy_.batch_rows) return absl::OkStatus();
        std::vector<int64_t> positions;
        {
          ResetOnExit reset(scopes);
          scopes.Bind(1, id);
          scopes.Bind(2, policy_.batch_rows - static_cast<int64_t>(rows.size()));
          while (true) {
            ASSIGN_OR_RETURN(bool row, scopes.Step());
            if (!row) break;
            positions.push_back(scopes.Int(0));
          }
        }
        for (int64_t pos : positions) {
          ResetOnExit r1(del_scope), r2(log);
          del_scope.Bind(1, pos);
          RETURN_IF_ERROR(del_scope.Run());
          log.Bind(1, pos);
          RETURN_IF_ERROR(log.Run());
        }
        report_.scopes.rows += static_cast<int64_t>(positions.size());
        done = positions.empty() && rows.empty();
        return absl::OkStatus();
      });
      RETURN_IF_ERROR(batch);
    }
    return absl::OkStatus();
  }

  // Deletes the candidate blobs no event references. The references are found by one scan of
  // trail_events in a read snapshot (no lock held); a batch then deletes a blob only if no event
  // appended after that snapshot (seq above its end) references it either.
  absl::Status SweepBlobs() {
    std::unordered_set<std::string> referenced;
    int64_t snapshot_end = 0;
    {
      ASSIGN_OR_RETURN(Statement any,
                       db_.Prepare("SELECT COUNT(*) FROM retention_blob_candidates"));
      ASSIGN_OR_RETURN(int64_t candidates, ScalarInt(any));
      if (candidates == 0) return absl::OkStatus();
      RETURN_IF_ERROR(db_.Exec("BEGIN"));
      auto read = [&]() -> absl::Status {
        ASSIGN_OR_RETURN(Statement end,
                         db_.Prepare("SELECT COALESCE(MAX(seq), 0) FROM trail_events"));
        ASSIGN_OR_RETURN(snapshot_end, ScalarInt(end));
        ASSIGN_OR_RETURN(Statement refs,
                         db_.Prepare("SELECT DISTINCT e.blob_hash FROM trail_events e JOIN "
                                     "retention_blob_candidates c ON c.hash = e.blob_hash"));
        while (true) {
          ASSIGN_OR_RETURN(bool row, refs.Step());
          if (!row) break;
          referenced.insert(refs.Text(0));
        }
        return absl::OkStatus();
      };
      absl::Status st = read();
      db_.Exec("COMMIT").IgnoreError();
      RETURN_IF_ERROR(st);
    }
    ASSIGN_OR_RETURN(Statement page,
                     db_.Prepare("SELECT hash FROM retention_blob_candidates WHERE hash > ?1 "
                                 "ORDER BY hash LIMIT ?2"));
    ASSIGN_OR_RETURN(Statement drop,
                     db_.Prepare("DELETE FROM retention_blob_candidates WHERE hash = ?1"));
    ASSIGN_OR_RETURN(Statement del,
                     db_.Prepare("DELETE FROM trail_blobs WHERE hash = ?1 AND NOT EXISTS "
                                 "(SELECT 1 FROM trail_events WHERE seq > ?2 AND blob_hash = ?1) "
                                 "RETURNING size"));
    std::string after;
    while (true) {
      std::vector<std::string> hashes;
      {
        ResetOnExit reset(page);
        page.Bind(1, after);
        page.Bind(2, policy_.batch_rows);
        while (true) {
          ASSIGN_OR_RETURN(bool row, page.Step());
          if (!row) break;
          hashes.push_back(page.Text(0));
        }
      }
      if (hashes.empty()) return absl::OkStatus();
      after = hashes.back();
      absl::Status batch = Batch([&]() -> absl::Status {
        for (const std::string& h : hashes) {
          if (!referenced.contains(h)) {
            ResetOnExit reset(del);
            del.Bind(1, h);
            del.Bind(2, snapshot_end);
            ASSIGN_OR_RETURN(bool row, del.Step());
            if (row) {
              ++report_.blobs.rows;
              report_.blobs.bytes += del.Int(0);
            }
          }
          ResetOnExit reset(drop);
          drop.Bind(1, h);
          RETURN_IF_ERROR(drop.Run());
        }
        return absl::OkStatus();
      });
      RETURN_IF_ERROR(batch);
    }
  }

  // Rolls model_usage rows older than the window into model_usage_daily and deletes them, in
  // ranges of batch_rows seqs (seq order is about time order; rows of a range still recent
  // stay). Stops at the first range with nothing old in it.
  absl::Status SweepUsage() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.usage_detail_ms);
    ASSIGN_OR_RETURN(Statement range,
                     db_.Prepare("SELECT MAX(seq), SUM(at_ms < ?3) FROM (SELECT seq, at_ms FROM "
                                 "model_usage WHERE seq > ?1 ORDER BY seq LIMIT ?2)"));
    if (policy_.dry_run) {
      ASSIGN_OR_RETURN(Statement count,
                       db_.Prepare("SELECT COUNT(*), COUNT(DISTINCT tenant || char(10) || project "
                                   "|| char(10) || (at_ms / 86400000)) FROM model_usage WHERE "
                                   "at_ms < ?1"));
      count.Bind(1, cutoff);
      ASSIGN_OR_RETURN(bool row, count.Step());
      if (row) {
        report_.usage_rows.rows = count.Int(0);
        report_.usage_days = count.Int(1);
      }
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(
        Statement rollup,
        db_.Prepare(
            "INSERT INTO model_usage_daily (tenant, project, day, requests, input_tokens, "
            "cache_read_input_tokens, cache_creation_input_tokens, output_tokens, tokens_before, "
            "tokens_after, duration_ms, last_at_ms, folds_new, folds_skipped) SELECT tenant, "
            "project, at_ms / 86400000, COUNT(*), SUM(input_tokens), "
            "SUM(cache_read_input_tokens), SUM(cache_creation_input_tokens), SUM(output_tokens), "
            "SUM(tokens_before), SUM(tokens_after), SUM(duration_ms), MAX(at_ms), "
            // The skips of a row, whatever their reasons ('' and text that is not JSON: none).
            "SUM(folds_new), SUM(CASE WHEN json_valid(folds_skipped) THEN (SELECT "
            "COALESCE(SUM(value), 0) FROM json_each(folds_skipped)) ELSE 0 END) "
            "FROM model_usage WHERE seq > ?1 AND "
            "seq <= ?2 AND at_ms < ?3 GROUP BY tenant, project, at_ms / 86400000 "
            "ON CONFLICT (tenant, project, day) DO UPDATE SET requests = requests + "
            "excluded.requests, input_tokens = input_tokens + excluded.input_tokens, "
            "cache_read_input_tokens = cache_read_input_tokens + "
            "excluded.cache_read_input_tokens, cache_creation_input_tokens = "
            "cache_creation_input_tokens + excluded.cache_creation_input_tokens, output_tokens = "
            "output_tokens + excluded.output_tokens, tokens_before = tokens_before + "
            "excluded.tokens_before, tokens_after = tokens_after + excluded.tokens_after, "
            "duration_ms = duration_ms + excluded.duration_ms, last_at_ms = MAX(last_at_ms, "
            "excluded.last_at_ms), folds_new = folds_new + excluded.folds_new, "
            "folds_skipped = folds_skipped + excluded.folds_skipped"));
    ASSIGN_OR_RETURN(Statement del,
                     db_.Prepare("DELETE FROM model_usage WHERE seq > ?1 AND seq <= ?2 AND "
                                 "at_ms < ?3"));
    int64_t after = 0;
    while (true) {
      int64_t end = 0, old = 0;
      {
        ResetOnExit reset(range);
        range.Bind(1, after);
        range.Bind(2, policy_.batch_rows);
        range.Bind(3, cutoff);
        ASSIGN_OR_RETURN(bool row, range.Step());
        if (!row || range.IsNull(0)) return absl::OkStatus();
        end = range.Int(0);
        old = range.Int(1);
      }
      if (old == 0) return absl::OkStatus();
      absl::Status batch = Batch([&]() -> absl::Status {
        for (Statement* st : {&rollup, &del}) {
          ResetOnExit reset(*st);
          st->Bind(1, after);
          st->Bind(2, end);
          st->Bind(3, cutoff);
          RETURN_IF_ERROR(st->Run());
          if (st == &rollup) report_.usage_days += db_.Changes();
          if (st == &del) report_.usage_rows.rows += db_.Changes();
        }
        return absl::OkStatus();
      });
      RETURN_IF_ERROR(batch);
      after = end;
    }
  }

  // Deletes the threads not seen for the window with their rewrites, a thread at a time (its
  // decisions go together), several threads per batch up to about batch_rows rows.
  absl::Status SweepConversations() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.conversation_ms);
    ASSIGN_OR_RETURN(Statement page,
                     db_.Prepare("SELECT tenant, conversation, thread FROM model_threads WHERE "
                                 "last_ms < ?1 LIMIT ?2"));
    ASSIGN_OR_RETURN(Statement count,
                     db_.Prepare("SELECT COUNT(*), COALESCE(SUM(length(key) + length(value)), "
                                 "0) FROM model_rewrites WHERE tenant = ?1 AND conversation = ?2 "
                                 "AND thread = ?3"));
    ASSIGN_OR_RETURN(Statement del_thread,
                     db_.Prepare("DELETE FROM model_threads WHERE tenant = ?1 AND conversation = "
                                 "?2 AND thread = ?3 AND last_ms < ?4"));
    ASSIGN_OR_RETURN(Statement del_rewrites,
                     db_.Prepare("DELETE FROM model_rewrites WHERE tenant = ?1 AND conversation = "
                                 "?2 AND thread = ?3"));
    while (true) {
      std::vector<std::array<std::string, 3>> threads;
      {
        ResetOnExit reset(page);
        page.Bind(1, cutoff);
        page.Bind(2, policy_.dry_run ? int64_t{1} << 40 : policy_.batch_rows);
        while (true) {
          ASSIGN_OR_RETURN(bool row, page.Step());
          if (!row) break;
          threads.push_back({page.Text(0), page.Text(1), page.Text(2)});
        }
      }
      if (threads.empty()) return absl::OkStatus();
      auto each = [&]() -> absl::Status {
        for (const auto& k : threads) {
          {
            ResetOnExit reset(count);
            for (int i = 0; i < 3; ++i) count.Bind(i + 1, k[i]);
            ASSIGN_OR_RETURN(bool row, count.Step());
            if (row) {
              report_.rewrites.rows += count.Int(0);
              report_.rewrites.bytes += count.Int(1);
            }
          }
          ++report_.threads.rows;
          if (policy_.dry_run) continue;
          ResetOnExit r1(del_thread), r2(del_rewrites);
          for (int i = 0; i < 3; ++i) del_thread.Bind(i + 1, k[i]);
          del_thread.Bind(4, cutoff);
          RETURN_IF_ERROR(del_thread.Run());
          if (db_.Changes() == 0) continue;  // seen meanwhile
          for (int i = 0; i < 3; ++i) del_rewrites.Bind(i + 1, k[i]);
          RETURN_IF_ERROR(del_rewrites.Run());
        }
        return absl::OkStatus();
      };
      if (policy_.dry_run) {
        RETURN_IF_ERROR(each());
        return absl::OkStatus();
      }
      absl::Status batch = Batch(each);
      RETURN_IF_ERROR(batch);
    }
  }

  // Deletes memory_history rows older than the window, except each item's newest.
  absl::Status SweepMemoryHistory() {
    const int64_t cutoff = Cutoff(now_ms_, policy_.memory_history_ms);
    constexpr char kOld[] =
        "FROM memory_history h WHERE h.at_ms < ?1 AND h.seq < (SELECT MAX(m.seq) FROM "
        "memory_history m WHERE m.memory_id = h.memory_id)";
    if (policy_.dry_run) {
      ASSIGN_OR_RETURN(Statement count, db_.Prepare(absl::StrCat("SELECT COUNT(*) ", kOld)));
      count.Bind(1, cutoff);
      ASSIGN_OR_RETURN(report_.memory_history.rows, ScalarInt(count));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Statement del,
                     db_.Prepare(absl::StrCat("DELETE FROM memory_history WHERE seq IN (SELECT "
                                              "h.seq ",
                                              kOld, " ORDER BY h.seq LIMIT ?2)")));
    while (true) {
      int64_t n = 0;
      absl::Status batch = Batch([&]() -> absl::Status {
        ResetOnExit reset(del);
        del.Bind(1, cutoff);
        del.Bind(2, policy_.batch_rows);
        RETURN_IF_ERROR(del.Run());
        n = db_.Changes();
        return absl::OkStatus();
      });
      RETURN_IF_ERROR(batch);
      report_.memory_history.rows += n;
      if (n < policy_.batch_rows) return absl::OkStatus();
    }
  }

  // Gives free pages back, vacuum_pages per transaction. A file still at auto_vacuum=NONE keeps
  // them on its freelist (reused by later writes) and says so.
  absl::Status Vacuum() {
    ASSIGN_OR_RETURN(Statement mode, db_.Prepare("PRAGMA auto_vacuum"));
    ASSIGN_OR_RETURN(int64_t auto_vacuum, ScalarInt(mode));
    ASSIGN_OR_RETURN(Statement free_pages, db_.Prepare("PRAGMA freelist_count"));
    if (auto_vacuum != 2) {
      ASSIGN_OR_RETURN(int64_t free, ScalarInt(free_pages));
      if (free > 0) {
        report_.vacuum_note = absl::StrCat(
            free,
            " free pages stay in the file (reused by later writes): it predates "
            "incremental vacuum; `contextd trail prune --vacuum` switches it (one VACUUM)");
      }
      return absl::OkStatus();
    }
    const std::string step = absl::StrCat("PRAGMA incremental_vacuum(", policy_.vacuum_pages, ")");
    while (true) {
      ASSIGN_OR_RETURN(int64_t before, ScalarInt(free_pages));
      if (before == 0) return absl::OkStatus();
      absl::Status batch = Batch([&]() -> absl::Status { return db_.Exec(step); });
      RETURN_IF_ERROR(batch);
      ASSIGN_OR_RETURN(int64_t after, ScalarInt(free_pages));
      report_.vacuumed_pages += before - after;
      if (after >= before) return absl::OkStatus();
    }
  }

  Database& db_;
  const RetentionPolicy& policy_;
  const int64_t now_ms_;
  RetentionReport report_;
};

absl::StatusOr<std::unique_ptr<SqliteRetentionStore>> SqliteRetentionStore::Open(
    const std::string& path, int busy_timeout_ms) {
  DatabaseOptions options;
  options.background_checkpoint_ms = 0;
  options.busy_timeout_ms = busy_timeout_ms;
  options.create_directories = false;
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  {
    std::lock_guard<std::mutex> lock(db->mutex());
    RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=OFF"));
    RETURN_IF_ERROR(db->Exec("PRAGMA wal_autocheckpoint=0"));
  }
  return std::unique_ptr<SqliteRetentionStore>(new SqliteRetentionStore(std::move(db)));
}

absl::StatusOr<RetentionReport> SqliteRetentionStore::Sweep(const RetentionPolicy& policy,
                                                            int64_t now_ms) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  Sweeper sweeper(*db_, policy, now_ms);
  return sweeper.Run();
}

absl::StatusOr<RetentionKept> SqliteRetentionStore::Kept() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare("SELECT (SELECT COUNT(*) FROM trail_scopes), (SELECT COUNT(*) FROM "
                   "trail_events), (SELECT COUNT(*) FROM trail_blobs), (SELECT "
                   "COALESCE(SUM(size), 0) FROM trail_blobs), (SELECT COUNT(*) FROM model_usage), "
                   "(SELECT COUNT(*) FROM model_usage_daily), (SELECT COUNT(*) FROM "
                   "model_threads), (SELECT COUNT(*) FROM model_rewrites), (SELECT "
                   "COALESCE(SUM(length(key) + length(value)), 0) FROM model_rewrites), (SELECT "
                   "COUNT(*) FROM memory_history), (SELECT page_count * page_size FROM "
                   "pragma_page_count(), pragma_page_size()) - (SELECT freelist_count * "
                   "page_size FROM pragma_freelist_count(), pragma_page_size())"));
  ResetOnExit reset(st);
  ASSIGN_OR_RETURN(bool row, st.Step());
  RetentionKept k;
  if (!row) return k;
  int64_t* fields[] = {&k.scopes,        &k.events,         &k.blobs,         &k.blob_bytes,
                       &k.usage_rows,    &k.usage_days,     &k.threads,       &k.rewrites,
                       &k.rewrite_bytes, &k.memory_history, &k.database_bytes};
  for (int i = 0; i < 11; ++i) *fields[i] = st.Int(i);
  return k;
}

absl::Status SqliteRetentionStore::SwitchToIncrementalVacuum() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(Statement mode, db_->Prepare("PRAGMA auto_vacuum"));
  ASSIGN_OR_RETURN(bool row, mode.Step());
  if (row && mode.Int(0) == 2) return absl::OkStatus();
  mode.Reset();
  RETURN_IF_ERROR(db_->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
  return db_->Exec("VACUUM");
}

std::string RetentionSummary(const RetentionReport& r) {
  if (r.skipped) return "retention sweep skipped: another instance is sweeping";
  return absl::StrCat(
      "swept ", r.sessions.rows, " idle session(s) (", r.scopes.rows, " scopes, ", r.events.rows,
      " events, ", r.blobs.rows, " blobs of ", r.blobs.bytes, " bytes), ", r.usage_rows.rows,
      " usage rows into ", r.usage_days, " daily totals, ", r.threads.rows,
      " conversation thread(s) (", r.rewrites.rows, " decisions, ", r.rewrites.bytes, " bytes), ",
      r.memory_history.rows, " memory history rows; ", r.vacuumed_pages, " pages vacuumed; ",
      r.batches, " batches, longest ", r.batch_us_max, " us, ", r.elapsed_ms, " ms",
      r.vacuum_note.empty() ? "" : absl::StrCat("; ", r.vacuum_note));
}

}  // namespace contextd::store
