// Database: one SQLite connection to contextd's database file, opened with the settings every
// store relies on (WAL, synchronous=NORMAL by default, foreign_keys=ON, busy_timeout) and with
// the numbered schema migrations of migrations.h applied in a transaction at open; the write
// transactions of the stores (plain, or grouped: many writes share one commit); plus a small
// RAII prepared-statement wrapper. Thread-safe only under mutex(): callers lock it around every
// use of the connection and its statements (CommitGroup, group_open() and RestartWalIfDue lock
// it themselves).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/rows.h"

struct sqlite3;
struct sqlite3_stmt;

namespace contextd::store {

struct DatabaseOptions {
  // synchronous=FULL also survives power loss at the price of an fsync per commit; the default
  // NORMAL (in WAL mode) survives any process crash, kill -9 included.
  bool synchronous_full = false;
  // How long a writer waits for another connection's write lock before failing with Unavailable.
  int busy_timeout_ms = 5000;
  // Create the file's directory if missing.
  bool create_directories = true;
  // Copy the WAL back into the database file on a background thread (its own connection) every
  // this many milliseconds, instead of inside whichever commit crosses SQLite's 1000-page
  // threshold: a checkpoint fsyncs, which would otherwise add milliseconds to 1 commit in ~100.
  // Commits are durable in the WAL either way. 0 keeps SQLite's automatic checkpoints.
  int background_checkpoint_ms = 200;
  // With the background checkpointer: the WAL size at which the writer restarts the WAL
  // (Database::RestartWalIfDue); a WAL file that grew past twice this is truncated back to
  // twice this after a restart (a smaller file would be truncated at every restart, and ext4
  // with `discard` frees the blocks synchronously). 0: never.
  int64_t wal_restart_bytes = int64_t{64} << 20;
  // The page size of a database file this open creates (a power of two, 512-65536); an existing
  // file keeps the size it was created with (changing it needs a VACUUM outside WAL mode). Each
  // commit writes every page it dirtied to the WAL in full, and a branch round trip dirties
  // about ten b-tree pages for well under a kilobyte of rows: with 1 KiB pages a commit writes
  // about a third of the bytes of 4 KiB pages (SQLite's default), so there is a third as much
  // WAL to checksum, write, sync, copy back and restart (decision 0012).
  int page_size = 1024;
};

// Process-wide SQLite settings, applied by the first Database::Open (later opens skip it):
// SQLite's memory statistics are turned off, since with them every allocation takes a global
// mutex (about 13% of the engine executor's instructions per branch pair). Takes effect only
// before SQLite is initialized: returns FailedPrecondition if something initialized it first.
// Not thread-safe against other SQLite use in the process (sqlite3_config's own contract).
absl::Status ConfigureSqlite();

// Where the database lives by default: $XDG_DATA_HOME/contextd/contextd.db, or
// ~/.local/share/contextd/contextd.db. InvalidArgument if neither XDG_DATA_HOME nor HOME is set.
absl::StatusOr<std::string> DefaultDatabasePath();

// A prepared statement; reset and unbound before each use by Database::Prepare's users.
class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Resets the statement and clears its bindings.
  void Reset();
  // Binds parameter `index` (1-based).
  void Bind(int index, int64_t value);
  void Bind(int index, std::string_view value);
  // Binds `value` as a BLOB (an empty one too, never NULL): bytes compared and kept as they are.
  void BindBlob(int index, std::string_view value);
  void BindNull(int index);
  // Steps once: true if a row is available, false when done; Unavailable (SQLITE_BUSY) or
  // Internal on error.
  absl::StatusOr<bool> Step();
  // Steps until done (for statements without rows).
  absl::Status Run();
  // Column accessors for the current row (0-based).
  int64_t Int(int col) const;
  double Real(int col) const;
  std::string Text(int col) const;
  // The column's bytes as stored (a BLOB, or a TEXT's bytes); empty for NULL.
  std::string Blob(int col) const;
  bool IsNull(int col) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// The current row of a Statement as a store::Row (store/rows.h), for the shared mappers.
class SqliteRow final : public Row {
 public:
  explicit SqliteRow(const Statement& st) : st_(st) {}
  bool IsNull(int col) const override { return st_.IsNull(col); }
  int64_t Int(int col) const override { return st_.Int(col); }
  std::string Text(int col) const override { return st_.Text(col); }
  std::string Bytes(int col) const override { return st_.Blob(col); }
  bool Bool(int col) const override { return st_.Int(col) != 0; }

 private:
  const Statement& st_;
};

// Resets a statement when the scope ends, so that it never holds a read snapshot or lock.
class ResetOnExit {
 public:
  explicit ResetOnExit(Statement& st) : st_(st) {}
  ~ResetOnExit() { st_.Reset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  Statement& st_;
};

class Database {
 public:
  // Opens (creating if needed) the database at `path` (":memory:" allowed for tests), sets the
  // pragmas, and applies pending migrations in one transaction. FailedPrecondition if the file's
  // schema is newer than this binary; Unavailable/Internal if SQLite fails (the message names
  // the path).
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        const DatabaseOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Guards the connection and every statement prepared on it.
  std::mutex& mutex() { return mu_; }
  // Executes `sql` (one or more statements without parameters). Caller holds mutex().
  absl::Status Exec(std::string_view sql);
  // Prepares `sql`. Caller holds mutex().
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Rows changed by the last INSERT/UPDATE/DELETE. Caller holds mutex().
  int64_t Changes();
  // The rowid of the last row inserted on this connection. Caller holds mutex().
  int64_t LastInsertRowid();
  // The extended SQLite result code of the last failed call (SQLITE_CONSTRAINT_FOREIGNKEY, ...).
  // Caller holds mutex().
  int LastErrorCode();

  // Write transactions. A store brackets each atomic write with BeginWrite() and
  // EndWrite(body_status), holding mutex() across both. EndWrite returns body_status if it is an
  // error (the write is rolled back, nothing of it stays), else the status of making it stick.
  // Plain mode (the default): BEGIN IMMEDIATE ... COMMIT; the write is durable when EndWrite
  // returns OK.
  // Group mode (after EnableGroupCommit): the first write after a group commit opens a group
  // transaction and calls `on_group_open` (under mutex(); it must not use the Database, only
  // schedule CommitGroup); each write is a savepoint inside it, so a failed write still undoes
  // only itself. EndWrite's OK then means "applied, durable once CommitGroup returns OK": the
  // caller must not acknowledge the write to anyone before that (server/group_commit.h holds the
  // replies). Unavailable/Internal if SQLite fails.
  absl::Status BeginWrite();
  absl::Status EndWrite(absl::Status body_status);
  // Read transactions. A store brackets a read of several statements with BeginRead() and
  // EndRead(began), holding mutex() across both: the statements see one snapshot, and the
  // connection takes its WAL read lock once instead of once per statement (each lock is a few
  // fcntl calls). BeginRead returns whether it began one: inside an open write or group
  // transaction it does nothing (the reads see that transaction), and EndRead(false) neither.
  absl::StatusOr<bool> BeginRead();
  void EndRead(bool began);
  // Switches to group mode. Call once, before any write that should be grouped; not while a
  // write is open. Caller does not hold mutex().
  void EnableGroupCommit(std::function<void()> on_group_open);
  // Commits the open group transaction, if any (OK if none). On error the whole group is rolled
  // back: every write since the last group commit is lost, and the error says why. Caller does
  // not hold mutex().
  absl::Status CommitGroup();
  // True while a group transaction is open. Caller does not hold mutex().
  bool group_open();
  // Call after a group commit, once its replies are on their way. When the WAL is over
  // wal_restart_bytes and the background checkpointer has copied all but a short tail of it,
  // copies and syncs that tail (a few milliseconds), so that the next write starts the WAL
  // again from its beginning: SQLite restarts a WAL only when a write begins with nothing left
  // to copy, which a writer that is never idle would not meet, and the WAL would grow without
  // end. Plain mode does this itself after each commit. Caller does not hold mutex().
  void RestartWalIfDue();
  // Runs one passive checkpoint now on the checkpointer's connection (no-op without one);
  // returns the WAL frames still not copied. Internal if that connection is not in WAL mode.
  // For tests and shutdown.
  absl::StatusOr<int> CheckpointNow();
  // The highest migration applied. Caller holds mutex().
  absl::StatusOr<int> SchemaVersion();
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  absl::Status Migrate();
  absl::Status Error(std::string_view what) const;
  // Steps a prepared control statement (BEGIN, SAVEPOINT, ...) once. Caller holds mutex().
  absl::Status Control(Statement& stmt);

  void StartCheckpointer(sqlite3* conn, int interval_ms);
  void CheckpointLoop(int interval_ms);
  // sqlite3_wal_hook: records the WAL's length after each commit on db_.
  static int OnWalCommit(void* self, sqlite3* db, const char* schema, int frames);
  void RestartWalIfDueLocked();  // Caller holds mu_.

  std::mutex mu_;
  sqlite3* db_;
  // Group commit state, under mu_.
  std::function<void()> on_group_open_;
  bool group_mode_ = false;
  bool group_open_ = false;
  // Set when a group had to be rolled back before its commit; CommitGroup reports it once.
  absl::Status group_failed_;
  // Control statements, prepared once (sqlite3_exec would parse them on every write).
  Statement begin_, begin_read_, commit_, rollback_, savepoint_, release_, rollback_to_;
  // Background checkpointer: its own connection, used only under ckpt_mu_. Lock order: mu_, then
  // ckpt_mu_.
  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_;
  bool ckpt_stop_ = false;
  sqlite3* ckpt_db_ = nullptr;
  std::thread ckpt_thread_;
  // WAL frames after the last commit on db_, and frames the checkpointer had copied when it
  // last ran; wal_restart_frames_ 0 disables RestartWalIfDue.
  std::atomic<int64_t> wal_frames_{0};
  std::atomic<int64_t> ckpt_copied_{0};
  int64_t wal_restart_frames_ = 0;
  std::string path_;
};

// Opens an SQLite connection to `path` with `flags` (plus SQLITE_OPEN_NOMUTEX) through
// contextd's WAL-gathering VFS, with `busy_timeout_ms`. Unavailable "cannot open <what>: ..."
// on failure (nothing is left open).
absl::StatusOr<sqlite3*> OpenConnection(const std::string& path, int flags, std::string_view what,
                                        int busy_timeout_ms);

// Converts an SQLite result code and message into a Status (BUSY/LOCKED -> Unavailable,
// CONSTRAINT -> AlreadyExists for unique/primary-key violations else FailedPrecondition,
// others -> Internal).
absl::Status SqliteStatus(int code, std::string_view message);

}  // namespace contextd::store
