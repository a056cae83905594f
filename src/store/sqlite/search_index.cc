#include "store/sqlite/search_index.h"

#include <pthread.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"

namespace contextd::store {
namespace {

// The index file's schema. search_meta holds `main_id` (the trail_search_identity of the database
// it indexes) and `watermark` (the last trail_fts_log entry indexed).
constexpr char kIndexSchema[] =
    "CREATE TABLE IF NOT EXISTS search.search_meta (key TEXT PRIMARY KEY, value NOT NULL);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS search.trail_fts USING fts5(description, summary, "
    "tokenize = 'unicode61');";

absl::Status Fail(sqlite3* db, std::string_view what, std::string_view path) {
  absl::Status st = SqliteStatus(sqlite3_extended_errcode(db), sqlite3_errmsg(db));
  return absl::Status(st.code(), base::StrCat(path, ": ", what, ": ", st.message()));
}

}  // namespace

std::string SearchIndexPath(std::string_view db_path) { return base::StrCat(db_path, "-search"); }

absl::StatusOr<std::unique_ptr<SearchIndex>> SearchIndex::Open(const std::string& db_path,
                                                               std::string_view search_sql,
                                                               const SearchIndexOptions& options) {
  // CREATE for the index file, which ATTACH opens with this connection's flags; the database
  // itself exists (its store opened and migrated it).
  ASSIGN_OR_RETURN(sqlite3 * db,
                   OpenConnection(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                  base::StrCat(db_path, " for search"), options.busy_timeout_ms));
  std::unique_ptr<SearchIndex> index(new SearchIndex(db, SearchIndexPath(db_path), options));
  index->search_sql_ = std::string(search_sql);
  if (options.interval_ms > 0) {
    // The server: errors now rather than at the first pass, and the thread finds it ready.
    {
      std::lock_guard<std::mutex> lock(index->mu_);
      RETURN_IF_ERROR(index->AttachLocked());
    }
    index->thread_ = std::thread(
        [raw = index.get()] { base::RunLoopCatching("search_index", [raw] { raw->Loop(); }); });
  }
  return index;
}

SearchIndex::~SearchIndex() {
  if (thread_.joinable()) {
    stop_requested_.store(true, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Statement* st : {&begin_, &commit_, &rollback_, &lock_index_, &read_meta_, &read_identity_,
                        &read_log_end_, &clear_, &rebuild_chunk_end_, &rebuild_, &delete_logged_,
                        &insert_logged_, &write_meta_, &delete_meta_, &search_}) {
    *st = Statement();
  }
  sqlite3_close_v2(db_);
}

absl::Status SearchIndex::AttachLocked() {
  if (attached_) return absl::OkStatus();
  // Attach, set up and read the index file; one that is not a database (or is damaged) is
  // deleted and made again, since it holds nothing the database does not.
  for (int attempt = 0;; ++attempt) {
    char* attach = sqlite3_mprintf("ATTACH DATABASE %Q AS search", path_.c_str());
    if (attach == nullptr) return absl::ResourceExhaustedError("out of memory");
    absl::Status st = Exec(attach);
    sqlite3_free(attach);
    const bool was_attached = st.ok();
    if (st.ok()) st = Exec("PRAGMA search.journal_mode=WAL");
    if (st.ok()) st = Exec("PRAGMA search.synchronous=NORMAL");
    if (st.ok()) st = Exec(kIndexSchema);
    if (st.ok()) st = Exec("SELECT COUNT(*) FROM search.search_meta");
    if (st.ok()) st = Prepare(search_sql_);
    if (st.ok()) break;
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (was_attached) (void)Exec("DETACH DATABASE search");  // so that a later call starts over
    if (attempt > 0 || (code != SQLITE_NOTADB && code != SQLITE_CORRUPT)) return st;
    base::LogWarn(
        base::StrCat("search index ", path_, " is unreadable (", st.message(), "): rebuilding it"));
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(path_ + suffix, ec);
    }
  }
  attached_ = true;
  return absl::OkStatus();
}

absl::Status SearchIndex::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return Fail(db_, sql, path_);
  return absl::OkStatus();
}

absl::Status SearchIndex::Prepare(std::string_view search_sql) {
  auto prepare = [this](Statement& out, std::string_view sql) -> absl::Status {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Fail(db_, base::StrCat("prepare \"", sql, "\""), path_);
    out = Statement(stmt);
    return absl::OkStatus();
  };
  // Deferred: BEGIN IMMEDIATE would take the write lock of the database too. The first statement
  // of a pass writes to the index file, so that its write lock (and only that) is taken before
  // anything of it is read.
  RETURN_IF_ERROR(prepare(begin_, "BEGIN"));
  RETURN_IF_ERROR(prepare(commit_, "COMMIT"));
  RETURN_IF_ERROR(prepare(rollback_, "ROLLBACK"));
  RETURN_IF_ERROR(
      prepare(lock_index_, "UPDATE search.search_meta SET value = value WHERE key = 'watermark'"));
  RETURN_IF_ERROR(prepare(read_meta_, "SELECT value FROM search.search_meta WHERE key = ?"));
  RETURN_IF_ERROR(prepare(read_identity_, "SELECT id FROM main.trail_search_identity"));
  RETURN_IF_ERROR(prepare(read_log_end_, "SELECT COALESCE(MAX(seq), 0) FROM main.trail_fts_log"));
  RETURN_IF_ERROR(prepare(clear_, "DELETE FROM search.trail_fts"));
  RETURN_IF_ERROR(prepare(rebuild_chunk_end_,
                          "SELECT MAX(pos), COUNT(*) FROM (SELECT pos FROM main.trail_scopes "
                          "WHERE pos > ?1 ORDER BY pos LIMIT ?2)"));
  RETURN_IF_ERROR(prepare(rebuild_,
                          "INSERT INTO search.trail_fts (rowid, description, summary) "
                          "SELECT pos, description, summary FROM main.trail_scopes "
                          "WHERE pos > ?1 AND pos <= ?2 ORDER BY pos"));
  RETURN_IF_ERROR(prepare(delete_meta_, "DELETE FROM search.search_meta WHERE key = ?"));
  RETURN_IF_ERROR(prepare(delete_logged_,
                          "DELETE FROM search.trail_fts WHERE rowid IN (SELECT pos FROM "
                          "main.trail_fts_log WHERE seq > ?1 AND seq <= ?2)"));
  RETURN_IF_ERROR(prepare(insert_logged_,
                          "INSERT INTO search.trail_fts (rowid, description, summary) "
                          "SELECT s.pos, s.description, s.summary FROM main.trail_scopes s "
                          "WHERE s.pos IN (SELECT pos FROM main.trail_fts_log WHERE seq > ?1 "
                          "AND seq <= ?2) ORDER BY s.pos"));
  RETURN_IF_ERROR(
      prepare(write_meta_, "INSERT OR REPLACE INTO search.search_meta (key, value) VALUES (?, ?)"));
  return prepare(search_, search_sql);
}

void SearchIndex::Noted(int64_t seq) {
  int64_t prev = noted_seq_.load(std::memory_order_relaxed);
  while (seq > prev && !noted_seq_.compare_exchange_weak(prev, seq, std::memory_order_relaxed)) {
  }
  if (options_.interval_ms > 0 && seq - indexed_seq() >= options_.wake_after) wake_.notify_one();
}

absl::Status SearchIndex::CatchUp() {
  std::lock_guard<std::mutex> lock(mu_);
  return CatchUpLocked(std::chrono::steady_clock::time_point::max());
}

absl::Status SearchIndex::CatchUpLocked(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    ASSIGN_OR_RETURN(bool rebuilding, StepLocked());
    if (!rebuilding) return absl::OkStatus();
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          base::StrCat(path_, " is being rebuilt from the database (up to scope ", rebuilt_to_,
                       "): this search sees only what it holds so far"));
    }
  }
}

absl::StatusOr<bool> SearchIndex::StepLocked() {
  RETURN_IF_ERROR(AttachLocked());
  auto step = [this](Statement& st) -> absl::StatusOr<bool> {
    auto row = st.Step();
    if (!row.ok()) {
      return absl::Status(row.status().code(),
                          base::StrCat(path_, ": indexing the trail: ", row.status().message()));
    }
    return row;
  };
  auto run = [&](Statement& st) -> absl::Status {
    ResetOnExit reset(st);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, step(st));
      if (!row) return absl::OkStatus();
    }
  };
  auto write_meta = [&](std::string_view key, const auto& value) -> absl::Status {
    write_meta_.Bind(1, key);
    write_meta_.Bind(2, value);
    return run(write_meta_);
  };
  RETURN_IF_ERROR(run(begin_));
  int64_t watermark = 0;
  bool rebuilding = false;
  absl::Status body = [&]() -> absl::Status {
    RETURN_IF_ERROR(run(lock_index_));
    auto read_meta = [&](std::string_view key, std::string& out) -> absl::StatusOr<bool> {
      ResetOnExit reset(read_meta_);
      read_meta_.Bind(1, key);
      ASSIGN_OR_RETURN(bool row, step(read_meta_));
      if (row) out = read_meta_.Text(0);
      return row;
    };
    std::string main_id, watermark_text, rebuilt_to_text;
    ASSIGN_OR_RETURN(bool has_id, read_meta("main_id", main_id));
    ASSIGN_OR_RETURN(bool has_watermark, read_meta("watermark", watermark_text));
    ASSIGN_OR_RETURN(rebuilding, read_meta("rebuilt_to", rebuilt_to_text));
    watermark = has_watermark ? std::atoll(watermark_text.c_str()) : 0;
    int64_t rebuilt_to = rebuilding ? std::atoll(rebuilt_to_text.c_str()) : 0;
    std::string identity;
    {
      ResetOnExit reset(read_identity_);
      ASSIGN_OR_RETURN(bool row, step(read_identity_));
      if (row) identity = read_identity_.Text(0);
    }
    int64_t log_end = 0;
    {
      ResetOnExit reset(read_log_end_);
      ASSIGN_OR_RETURN(bool row, step(read_log_end_));
      log_end = row ? read_log_end_.Int(0) : 0;
    }
    if (!has_id || main_id != identity || log_end < watermark) {
      // A new index file, or one made for another database or a later state of this one: built
      // again from trail_scopes, in chunks (each its own transaction, so that searches and the
      // engine's trims go on meanwhile). What changes meanwhile is logged past `log_end`, the
      // watermark the rebuild ends at, and indexed after it.
      RETURN_IF_ERROR(run(clear_));
      RETURN_IF_ERROR(write_meta("main_id", identity));
      RETURN_IF_ERROR(write_meta("watermark", log_end));
      watermark = log_end;
      rebuilding = true;
      rebuilt_to = 0;
    }
    if (rebuilding) {
      int64_t chunk_end = 0, chunk_size = 0;
      {
        ResetOnExit reset(rebuild_chunk_end_);
        rebuild_chunk_end_.Bind(1, rebuilt_to);
        rebuild_chunk_end_.Bind(2, kRebuildChunk);
        ASSIGN_OR_RETURN(bool row, step(rebuild_chunk_end_));
        if (row && !rebuild_chunk_end_.IsNull(0)) {
          chunk_end = rebuild_chunk_end_.Int(0);
          chunk_size = rebuild_chunk_end_.Int(1);
        }
      }
      if (chunk_size > 0) {
        rebuild_.Bind(1, rebuilt_to);
        rebuild_.Bind(2, chunk_end);
        RETURN_IF_ERROR(run(rebuild_));
        rebuilt_to_ = chunk_end;
      }
      if (chunk_size == kRebuildChunk) return write_meta("rebuilt_to", chunk_end);
      rebuilding = false;  // a short chunk was the last; on to what was logged meanwhile
      ResetOnExit reset(delete_meta_);
      delete_meta_.Bind(1, std::string_view("rebuilt_to"));
      RETURN_IF_ERROR(run(delete_meta_));
    }
    if (log_end == watermark) return absl::OkStatus();
    for (Statement* st : {&delete_logged_, &insert_logged_}) {
      st->Bind(1, watermark);
      st->Bind(2, log_end);
      RETURN_IF_ERROR(run(*st));
    }
    watermark = log_end;
    return write_meta("watermark", log_end);
  }();
  if (body.ok()) body = run(commit_);
  if (!body.ok()) {
    if (!sqlite3_get_autocommit(db_)) (void)run(rollback_);
    return body;
  }
  if (!rebuilding) indexed_seq_.store(watermark, std::memory_order_release);
  return rebuilding;
}

absl::Status SearchIndex::Search(std::string_view match, std::string_view tenant,
                                 std::string_view project, int64_t limit,
                                 const std::function<absl::Status(Statement&)>& read) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(AttachLocked());
  // With the thread, a rebuild is its work: a search continues it only for a while (it runs on
  // the engine's executor). Without one, the search is the only indexer and finishes it.
  // The same budget bounds its wait for the index file's write lock, if another process holds
  // it (the connection's busy timeout is restored after).
  const bool bounded = options_.interval_ms > 0;
  const auto deadline = bounded ? std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(options_.search_rebuild_budget_ms)
                                : std::chrono::steady_clock::time_point::max();
  if (bounded) sqlite3_busy_timeout(db_, options_.search_rebuild_budget_ms);
  absl::Status caught_up = CatchUpLocked(deadline);
  if (bounded) sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
  if (!caught_up.ok()) {
    base::LogWarn(base::StrCat("search index not updated before a search: ", caught_up.message()));
  }
  ResetOnExit reset(search_);
  search_.Bind(1, match);
  search_.Bind(2, tenant);
  search_.Bind(3, project);
  search_.Bind(4, limit);
  absl::Status st = read(search_);
  // A search is a read transaction of its own: end it, so that it holds back neither the
  // checkpoints of the database nor the next pass.
  search_.Reset();
  return st;
}

void SearchIndex::Loop() {
  pthread_setname_np(pthread_self(), "contextd-search");
  // Below the engine's threads: a pass uses CPU time they would otherwise get, and nothing waits
  // for it but a search, which runs its own pass.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  std::unique_lock<std::mutex> wake_lock(wake_mu_);
  while (!stop_) {
    // Counted from what was noted when the last pass began: entries noted but not committed yet
    // (or a pass that fails) must not make the thread run pass after pass.
    wake_.wait_for(wake_lock, std::chrono::milliseconds(options_.interval_ms), [this] {
      return stop_ ||
             noted_seq_.load(std::memory_order_relaxed) - pass_noted_ >= options_.wake_after;
    });
    if (stop_) break;
    pass_noted_ = noted_seq_.load(std::memory_order_relaxed);
    wake_lock.unlock();
    // One transaction at a time, so that a search waits for at most one chunk of a rebuild.
    for (bool more = true; more;) {
      std::lock_guard<std::mutex> lock(mu_);
      absl::StatusOr<bool> st = StepLocked();
      if (!st.ok() && !failing_) {
        base::LogWarn(base::StrCat("search index not updated (retried every ", options_.interval_ms,
                                   " ms and before every search): ", st.status().message()));
      }
      failing_ = !st.ok();
      more = st.ok() && *st && !stop_requested_.load(std::memory_order_relaxed);
    }
    wake_lock.lock();
  }
}

}  // namespace contextd::store
