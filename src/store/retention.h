// RetentionStore: what contextd deletes once it is old enough (decision 0031): the trail of
// sessions idle past a window (scopes, events, and the blobs no event references any more), model
// usage detail (rolled up into daily totals first), the model gateway's decisions of conversations
// not seen for a window, and memory history. One sweep runs in bounded batches, each its own short
// transaction, off the engine's hot path; SqliteRetentionStore and PgRetentionStore implement it.
// Implementations are thread-safe (calls are serialized inside).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace contextd::store {

inline constexpr int64_t kDayMs = 86'400'000;

// How long each kind of row is kept, in milliseconds (0: forever), and how a sweep runs.
struct RetentionPolicy {
  int64_t trail_ms = 30 * kDayMs;            // a session's trail after its last activity
  int64_t usage_detail_ms = 30 * kDayMs;     // model_usage rows (then daily totals, forever)
  int64_t conversation_ms = 90 * kDayMs;     // a conversation thread's decisions after last seen
  int64_t memory_history_ms = 180 * kDayMs;  // memory_history rows (an item keeps its newest)
  int64_t batch_rows = 500;                  // rows deleted per transaction (about)
  int64_t vacuum_pages = 256;                // pages returned per incremental_vacuum step
  int64_t pause_us = 2'000;                  // between two batches, so that writers go first
  bool dry_run = false;                      // count what would go, delete nothing
};

// Rows (and bytes, where the store knows them) of one kind.
struct RetentionCount {
  int64_t rows = 0;
  int64_t bytes = 0;
};

// What one sweep removed (or, in a dry run, would remove; blobs are then not counted).
struct RetentionReport {
  RetentionCount sessions, scopes, events, blobs, usage_rows, threads, rewrites, memory_history;
  int64_t usage_days = 0;      // daily totals created or added to
  int64_t vacuumed_pages = 0;  // pages given back to the file system (SQLite)
  int64_t batches = 0;         // write transactions
  int64_t batch_us_total = 0;  // time inside them (holding the writer)
  int64_t batch_us_max = 0;
  int64_t elapsed_ms = 0;
  bool skipped = false;     // another instance is sweeping (PostgreSQL)
  std::string vacuum_note;  // e.g. why the file could not give space back yet
};

// What is kept, for the contextd_retention_*_kept gauges.
struct RetentionKept {
  int64_t scopes = 0, events = 0, blobs = 0, blob_bytes = 0, usage_rows = 0, usage_days = 0,
          threads = 0, rewrites = 0, rewrite_bytes = 0, memory_history = 0;
  int64_t database_bytes = 0;  // the file (SQLite: pages in use) or the tables (PostgreSQL)
};

class RetentionStore {
 public:
  virtual ~RetentionStore() = default;
  // Deletes what `policy` says is older than its window at `now_ms` (wall clock, ms since the
  // epoch). Safe beside live writers: each batch is one short transaction; a write that makes a
  // row recent again (a session's new event, a conversation's request) keeps it. Unavailable or
  // Internal on a database error: batches committed before it stay (each is complete).
  virtual absl::StatusOr<RetentionReport> Sweep(const RetentionPolicy& policy, int64_t now_ms) = 0;
  // Counts what is kept. Internal/Unavailable on a database error.
  virtual absl::StatusOr<RetentionKept> Kept() = 0;
};

// "swept 3 sessions (12 scopes, 480 events, 200 blobs, 1.2 MB), ..." for logs and the CLI.
std::string RetentionSummary(const RetentionReport& report);

}  // namespace contextd::store
