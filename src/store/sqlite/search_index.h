// SearchIndex: the trail's full-text index (an FTS5 table) in a SQLite file of its own beside the
// database, `<database>-search`, kept up to date by a thread of its own. Indexing is then not part
// of the engine executor's writes, which only append the position of each scope they open or
// fold to trail_fts_log (migration 0007; decision 0012).
//
// A pass indexes what the log holds past the watermark the index file keeps: it reads the
// database as of one snapshot and writes the index and the new watermark in one transaction of
// the index file, so that a crash loses no entry and indexes none twice. It takes no lock of the
// database (only a read snapshot), so it never holds up the engine's writes. Searches run a pass
// first, so they see every committed write, this process's or another's. The index file is
// rebuilt from trail_scopes when it is missing, unreadable, or belongs to another database or to
// an older copy of this one (the database's trail_search_identity and the log's end say so), in
// chunks of kRebuildChunk scopes, one transaction each, so that a search waits for one chunk at
// most (a large database's first open after migration 0007 rebuilds it all).
//
// Thread-safe: passes and searches are serialized on the index's own mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/sqlite/database.h"

struct sqlite3;

namespace contextd::store {

// Scopes indexed per transaction of a rebuild.
inline constexpr int64_t kRebuildChunk = 1000;

struct SearchIndexOptions {
  // The background thread runs a pass this often, and sooner once `wake_after` scopes were
  // noted. 0: no thread (a command-line tool): passes run only before searches.
  int interval_ms = 200;
  int64_t wake_after = 256;
  int busy_timeout_ms = 5000;
  // With the thread: how long a search (on the engine's executor) continues a rebuild, or waits
  // for the index file's write lock, before it answers from the index as it is (a rebuild always
  // gets at least one chunk).
  int search_rebuild_budget_ms = 100;
};

// The index file of the database at `db_path`.
std::string SearchIndexPath(std::string_view db_path);

class SearchIndex {
 public:
  // Opens a connection to the database at `db_path` (migrated to at least version 7), attaches
  // the index file (creating it, or recreating it if it is not a database), and starts the
  // thread. Without a thread (interval_ms 0) the index file is attached only when first needed,
  // so that a tool that never searches leaves no index file behind. `search_sql` is the search
  // statement, prepared on that connection: the index is `search.trail_fts`, the database's tables
  // are `main.*`, and it takes parameters (match, tenant, project, limit). Unavailable/Internal if
  // SQLite fails (the message names the file).
  static absl::StatusOr<std::unique_ptr<SearchIndex>> Open(const std::string& db_path,
                                                           std::string_view search_sql,
                                                           const SearchIndexOptions& options = {});
  ~SearchIndex();  // Stops the thread (waiting for a pass in progress) and closes the connection.
  SearchIndex(const SearchIndex&) = delete;
  SearchIndex& operator=(const SearchIndex&) = delete;

  // The writer appended log entry `seq` (committed or about to be). Wakes the thread once
  // `wake_after` entries wait. Any thread; never blocks.
  void Noted(int64_t seq);
  // The watermark after this process's last pass: every log entry at or below it is indexed,
  // so the writer may delete log entries below it (not the last one, which keeps the log's end).
  int64_t indexed_seq() const { return indexed_seq_.load(std::memory_order_acquire); }

  // Brings the index up to date now (a rebuild included). Internal/Unavailable if SQLite fails
  // (nothing of the failed transaction stays).
  absl::Status CatchUp();
  // Brings the index up to date, then runs `read` on the search statement bound to (match,
  // tenant, project, limit). With the thread, a rebuild in progress is continued for at most
  // search_rebuild_budget_ms: the search then sees only the scopes rebuilt so far. A failed or
  // unfinished catch-up does not stop the search (it answers from the index as it is); it is
  // logged.
  absl::Status Search(std::string_view match, std::string_view tenant, std::string_view project,
                      int64_t limit, const std::function<absl::Status(Statement&)>& read);

 private:
  SearchIndex(sqlite3* db, std::string path, SearchIndexOptions options)
      : db_(db), path_(std::move(path)), options_(options) {}
  // Attaches the index file and prepares the statements, once (a failure is retried at the next
  // call). Caller holds mu_.
  absl::Status AttachLocked();
  absl::Status Prepare(std::string_view search_sql);
  // One transaction of indexing: starts or continues a rebuild (kRebuildChunk scopes), or
  // indexes the log past the watermark. True while a rebuild is unfinished. Caller holds mu_.
  absl::StatusOr<bool> StepLocked();
  // Steps until up to date; DeadlineExceeded if a rebuild is still unfinished at `deadline`.
  // Caller holds mu_.
  absl::Status CatchUpLocked(std::chrono::steady_clock::time_point deadline);
  absl::Status Exec(const char* sql);
  void Loop();

  std::mutex mu_;  // the connection and every statement
  sqlite3* db_;
  std::string path_;  // the index file
  std::string search_sql_;
  bool attached_ = false;  // under mu_
  SearchIndexOptions options_;
  Statement begin_, commit_, rollback_, lock_index_, read_meta_, read_identity_, read_log_end_,
      clear_, rebuild_chunk_end_, rebuild_, delete_logged_, insert_logged_, write_meta_,
      delete_meta_, search_;
  bool failing_ = false;    // the last pass failed (logged once until one succeeds); under mu_
  int64_t rebuilt_to_ = 0;  // the last scope a rebuild indexed; under mu_

  std::atomic<int64_t> noted_seq_{0};
  std::atomic<int64_t> indexed_seq_{0};
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stop_ = false;                        // under wake_mu_
  std::atomic<bool> stop_requested_{false};  // ends a rebuild's run of chunks early
  int64_t pass_noted_ = 0;                   // noted_seq_ when the last pass began; under wake_mu_
  std::thread thread_;
};

}  // namespace contextd::store
