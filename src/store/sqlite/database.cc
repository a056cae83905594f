#include "store/sqlite/database.h"

#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "base/internal_errors.h"
#include "base/status_macros.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/wal_gather_vfs.h"

namespace contextd::store {
namespace {

absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

absl::Status SqliteStatus(int code, std::string_view message) {
  int primary = code & 0xff;
  std::string text = absl::StrCat("sqlite: ", Sv(message), " (", sqlite3_errstr(code), ")");
  switch (primary) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
      return absl::OkStatus();
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(text);
    case SQLITE_CONSTRAINT:
      if (code == SQLITE_CONSTRAINT_PRIMARYKEY || code == SQLITE_CONSTRAINT_UNIQUE) {
        return absl::AlreadyExistsError(text);
      }
      return absl::FailedPreconditionError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status ConfigureSqlite() {
  if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) {
    return absl::FailedPreconditionError(
        "SQLite was initialized before ConfigureSqlite: its settings cannot change now");
  }
  return absl::OkStatus();
}

absl::StatusOr<sqlite3*> OpenConnection(const std::string& path, int flags, std::string_view what,
                                        int busy_timeout_ms) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, WalGatherVfsName());
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("cannot open ", Sv(what), ": ", msg));
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return db;
}

absl::StatusOr<std::string> DefaultDatabasePath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return absl::StrCat(xdg, "/contextd/contextd.db");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.local/share/contextd/contextd.db");
  }
  return absl::InvalidArgumentError(
      "cannot find a data directory: neither XDG_DATA_HOME nor HOME is set; pass --data-dir");
}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Statement::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::Bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies, so callers may pass temporaries.
  sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void Statement::BindBlob(int index, std::string_view value) {
  // A null pointer would bind NULL (a default string_view has one): an empty BLOB is not NULL.
  const char* data = value.data() != nullptr ? value.data() : "";
  sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_TRANSIENT);
}

void Statement::BindNull(int index) { sqlite3_bind_null(stmt_, index); }

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_step returns the extended code with sqlite3_extended_result_codes on.
  return SqliteStatus(rc, sqlite3_errmsg(sqlite3_db_handle(stmt_)));
}

absl::Status Statement::Run() {
  for (;;) {
    ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::Real(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), n);
}

std::string Statement::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
}

bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         const DatabaseOptions& options) {
  if (options.page_size < 512 || options.page_size > 65536 ||
      (options.page_size & (options.page_size - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("page size ", options.page_size, " for ", path,
                                                   ": use a power of two from 512 to 65536"));
  }
  if (options.create_directories && path != ":memory:") {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        return absl::UnavailableError(
            absl::StrCat("cannot create directory ", dir.string(), ": ", ec.message()));
      }
    }
  }
  // Too late if the process used SQLite before (tests that open files directly): then the
  // statistics stay on, which costs time only.
  static const absl::Status configured = ConfigureSqlite();
  (void)configured;
  ASSIGN_OR_RETURN(sqlite3 * db,
                   OpenConnection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                  absl::StrCat("database ", path), options.busy_timeout_ms));
  sqlite3_extended_result_codes(db, 1);
  std::unique_ptr<Database> out(new Database(db, path));
  std::lock_guard<std::mutex> lock(out->mu_);
  // Before anything writes the file; a no-op on an existing file. Incremental vacuum lets the
  // retention sweep give freed pages back (decision 0031); a file made before keeps
  // auto_vacuum=NONE until `contextd trail prune --vacuum` (one VACUUM) switches it.
  // After page_size: setting auto_vacuum first would fix SQLite's default page size.
  RETURN_IF_ERROR(out->Exec(absl::StrCat("PRAGMA page_size=", options.page_size)));
  RETURN_IF_ERROR(out->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
  RETURN_IF_ERROR(out->Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(out->Exec(options.synchronous_full ? "PRAGMA synchronous=FULL"
                                                     : "PRAGMA synchronous=NORMAL"));
  // Statement journals (a savepoint per grouped write, FTS5 updates) in memory, not in a temp
  // file created and unlinked for every write.
  RETURN_IF_ERROR(out->Exec("PRAGMA temp_store=MEMORY"));
  RETURN_IF_ERROR(out->Migrate());  // Before foreign_keys=ON: see Migrate.
  RETURN_IF_ERROR(out->Exec("PRAGMA foreign_keys=ON"));
  ASSIGN_OR_RETURN(out->begin_, out->Prepare("BEGIN IMMEDIATE"));
  ASSIGN_OR_RETURN(out->begin_read_, out->Prepare("BEGIN DEFERRED"));
  ASSIGN_OR_RETURN(out->commit_, out->Prepare("COMMIT"));
  ASSIGN_OR_RETURN(out->rollback_, out->Prepare("ROLLBACK"));
  ASSIGN_OR_RETURN(out->savepoint_, out->Prepare("SAVEPOINT contextd_write"));
  ASSIGN_OR_RETURN(out->release_, out->Prepare("RELEASE contextd_write"));
  ASSIGN_OR_RETURN(out->rollback_to_, out->Prepare("ROLLBACK TO contextd_write"));
  if (options.background_checkpoint_ms > 0 && path != ":memory:") {
    RETURN_IF_ERROR(out->Exec("PRAGMA wal_autocheckpoint=0"));
    if (options.wal_restart_bytes > 0) {
      RETURN_IF_ERROR(
          out->Exec(absl::StrCat("PRAGMA journal_size_limit=", 2 * options.wal_restart_bytes)));
      ASSIGN_OR_RETURN(Statement page_size, out->Prepare("PRAGMA page_size"));
      ASSIGN_OR_RETURN(bool row, page_size.Step());
      // A WAL frame is a page and a 24-byte header.
      int64_t frame = (row ? page_size.Int(0) : 4096) + 24;
      out->wal_restart_frames_ = std::max<int64_t>(1, options.wal_restart_bytes / frame);
      sqlite3_wal_hook(db, &Database::OnWalCommit, out.get());
    }
    ASSIGN_OR_RETURN(sqlite3 * ckpt, OpenConnection(path, SQLITE_OPEN_READWRITE,
                                                    absl::StrCat("checkpoint connection to ", path),
                                                    options.busy_timeout_ms));
    // A connection opens the WAL only when it first reads the database; until then a checkpoint
    // on it does nothing at all (it reports -1 frames) and the WAL grows without end.
    int rc = sqlite3_exec(ckpt, "SELECT COUNT(*) FROM sqlite_schema", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(ckpt);
      sqlite3_close(ckpt);
      return absl::UnavailableError(
          absl::StrCat("cannot read ", path, " on the checkpoint connection: ", msg));
    }
    out->StartCheckpointer(ckpt, options.background_checkpoint_ms);
  }
  return out;
}

Database::~Database() {
  if (ckpt_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(ckpt_mu_);
      ckpt_stop_ = true;
    }
    ckpt_cv_.notify_all();
    ckpt_thread_.join();
  }
  if (ckpt_db_ != nullptr) sqlite3_close_v2(ckpt_db_);
  sqlite3_close_v2(db_);
}

void Database::StartCheckpointer(sqlite3* conn, int interval_ms) {
  ckpt_db_ = conn;
  ckpt_thread_ = std::thread([this, interval_ms] {
    base::RunLoopCatching("wal_checkpoint", [&] { CheckpointLoop(interval_ms); });
  });
}

void Database::CheckpointLoop(int interval_ms) {
  pthread_setname_np(pthread_self(), "contextd-ckpt");
  // Runs only on CPU time nothing else wants (SCHED_IDLE; allowed without privileges): at the
  // default priority its copies took CPU from the executor and the HTTP threads in bursts, and
  // paced p99 was about 1.5x higher (decision 0010). It still gets a small share of a busy CPU,
  // and a writer that gets ahead of it copies the WAL itself past twice the restart size. If the
  // policy cannot be set, it runs at the default priority.
  sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  std::unique_lock<std::mutex> lock(ckpt_mu_);
  while (!ckpt_stop_) {
    // Also woken by RestartWalIfDue when a restart waits for this copy. Not more often: a
    // checkpoint copies each page changed since the last one once (however often it changed)
    // and syncs twice.
    ckpt_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms));
    if (ckpt_stop_) break;
    int log_frames = 0, done = 0;
    // PASSIVE never blocks writers or readers; what it cannot copy now is copied next time.
    sqlite3_wal_checkpoint_v2(ckpt_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &done);
    if (done >= 0) ckpt_copied_.store(done, std::memory_order_relaxed);
  }
}

absl::StatusOr<int> Database::CheckpointNow() {
  std::lock_guard<std::mutex> lock(ckpt_mu_);
  if (ckpt_db_ == nullptr) return 0;
  int log_frames = 0, done = 0;
  int rc =
      sqlite3_wal_checkpoint_v2(ckpt_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &done);
  if (rc != SQLITE_OK) return SqliteStatus(rc, sqlite3_errmsg(ckpt_db_));
  if (log_frames < 0) {
    return absl::InternalError(
        absl::StrCat(path_, ": the checkpoint connection is not in WAL mode"));
  }
  ckpt_copied_.store(done, std::memory_order_relaxed);
  return log_frames - done;
}

int Database::OnWalCommit(void* self, sqlite3* /*db*/, const char* /*schema*/, int frames) {
  static_cast<Database*>(self)->wal_frames_.store(frames, std::memory_order_relaxed);
  return SQLITE_OK;
}

void Database::RestartWalIfDue() {
  // Called after every group commit: most find the WAL short, without taking the lock.
  if (wal_restart_frames_ == 0 ||
      wal_frames_.load(std::memory_order_relaxed) < wal_restart_frames_) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  RestartWalIfDueLocked();
}

void Database::RestartWalIfDueLocked() {
  // At most this many frames (128 KB with 1 KiB pages, 512 KB with 4 KiB) copied on the
  // writer's thread: the checkpoint also syncs both files, and the writer's next replies wait for
  // it (measured with 4 KiB pages: 1.5-3 ms with a tail of 20-50 frames, 3.5-5 ms with 250-350,
  // 7-13 ms with 600-1,000; with 1 KiB pages 4-6 ms at 5,000 pairs/s, mostly the database file's
  // sync, decision 0012). A longer tail asks the checkpointer to run now; each of its runs
  // leaves what was written while it ran, so the tail shrinks run by run. Past twice the limit
  // the writer copies whatever is left, so that a writer that outpaces the checkpointer still
  // bounds the WAL.
  constexpr int64_t kMaxTailFrames = 128;
  if (wal_restart_frames_ == 0) return;
  int64_t frames = wal_frames_.load(std::memory_order_relaxed);
  if (frames < wal_restart_frames_) return;
  bool overdue = frames >= 2 * wal_restart_frames_;
  if (frames - ckpt_copied_.load(std::memory_order_relaxed) > kMaxTailFrames && !overdue) {
    ckpt_cv_.notify_one();  // Copy now rather than at the next interval.
    return;
  }
  // Overdue, the checkpointer may be in the middle of a copy at its idle priority, holding
  // SQLite's checkpoint lock, on CPUs busy with other work: wait for its run to end (this thread
  // sleeping frees a CPU for it) rather than find the lock taken and let the WAL grow.
  std::unique_lock<std::mutex> ckpt_lock(ckpt_mu_, std::defer_lock);
  if (overdue) ckpt_lock.lock();
  int log_frames = 0, done = 0;
  // SQLITE_BUSY: the background checkpointer is running; the next commit tries again. A reader
  // on an older snapshot stops the copy short of the end, and the restart waits for it too.
  if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &done) ==
          SQLITE_OK &&
      done >= 0) {
    ckpt_copied_.store(done, std::memory_order_relaxed);
  }
}

absl::Status Database::Error(std::string_view what) const {
  absl::Status st = SqliteStatus(sqlite3_extended_errcode(db_), sqlite3_errmsg(db_));
  return absl::Status(st.code(), absl::StrCat(path_, ": ", Sv(what), ": ", st.message()));
}

absl::Status Database::Exec(std::string_view sql) {
  std::string copy(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    absl::Status st = SqliteStatus(rc, msg);
    return absl::Status(st.code(), absl::StrCat(path_, ": ", st.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(absl::StrCat("prepare \"", Sv(sql), "\""));
  return Statement(stmt);
}

int64_t Database::Changes() { return sqlite3_changes64(db_); }

int Database::LastErrorCode() { return sqlite3_extended_errcode(db_); }

int64_t Database::LastInsertRowid() { return sqlite3_last_insert_rowid(db_); }

absl::Status Database::Control(Statement& stmt) {
  stmt.Reset();
  absl::Status st = stmt.Run();
  stmt.Reset();
  if (!st.ok()) return absl::Status(st.code(), absl::StrCat(path_, ": ", st.message()));
  return st;
}

absl::StatusOr<bool> Database::BeginRead() {
  if (sqlite3_get_autocommit(db_) == 0) return false;  // inside a write or group transaction
  RETURN_IF_ERROR(Control(begin_read_));
  return true;
}

void Database::EndRead(bool began) {
  if (!began) return;
  // A read transaction has nothing to make stick; should COMMIT fail, ROLLBACK still ends it.
  if (!Control(commit_).ok()) Control(rollback_).IgnoreError();
}

absl::Status Database::BeginWrite() {
  if (!group_mode_) return Control(begin_);
  if (!group_open_) {
    RETURN_IF_ERROR(Control(begin_));
    group_open_ = true;
    if (on_group_open_) on_group_open_();
  }
  return Control(savepoint_);
}

absl::Status Database::EndWrite(absl::Status body_status) {
  if (!group_mode_) {
    if (!body_status.ok()) {
      Control(rollback_).IgnoreError();
      return body_status;
    }
    absl::Status st = Control(commit_);
    if (!st.ok()) {
      Control(rollback_).IgnoreError();
      return st;
    }
    RestartWalIfDueLocked();
    return st;
  }
  absl::Status st;
  if (!body_status.ok()) {
    // Undo this write only; the group's earlier writes stay.
    st = Control(rollback_to_);
    if (st.ok()) st = Control(release_);
  } else {
    st = Control(release_);
  }
  // Some errors (a full disk, an I/O error, out of memory) make SQLite roll back the whole
  // transaction by itself, also inside a body that swallowed them (a failed FTS batch): then
  // there is no group any more, and later writes would each commit on their own.
  if (st.ok() && sqlite3_get_autocommit(db_) != 0) {
    st = absl::AbortedError(absl::StrCat(path_, ": the group transaction was rolled back"));
  }
  if (!st.ok()) {
    // The group is in an unknown state: roll it all back so that CommitGroup reports the loss
    // to every writer in it instead of committing part of it.
    Control(rollback_).IgnoreError();
    group_open_ = false;
    group_failed_ = st;
    return body_status.ok() ? st : body_status;
  }
  return body_status;
}

void Database::EnableGroupCommit(std::function<void()> on_group_open) {
  std::lock_guard<std::mutex> lock(mu_);
  on_group_open_ = std::move(on_group_open);
  group_mode_ = true;
}

absl::Status Database::CommitGroup() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!group_failed_.ok()) {
    // Writes since the failure went into a new group; they are lost with the earlier ones, so
    // that everyone waiting on this commit hears the same answer.
    if (group_open_) Control(rollback_).IgnoreError();
    group_open_ = false;
    absl::Status failed = std::move(group_failed_);
    group_failed_ = absl::OkStatus();
    return failed;
  }
  if (!group_open_) return absl::OkStatus();
  group_open_ = false;
  absl::Status st = Control(commit_);
  if (!st.ok()) Control(rollback_).IgnoreError();
  return st;
}

bool Database::group_open() {
  std::lock_guard<std::mutex> lock(mu_);
  return group_open_;
}

absl::StatusOr<int> Database::SchemaVersion() {
  ASSIGN_OR_RETURN(Statement st, Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
  ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

absl::Status Database::Migrate() {
  // Foreign keys are not enforced while migrations run (the connection turns them on after), so
  // that a migration can rebuild a table other tables reference, as SQLite's documented
  // procedure for schema changes does; every foreign key is checked before the commit instead.
  // IMMEDIATE: two processes opening a new file at once migrate one after the other.
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> absl::Status {
    RETURN_IF_ERROR(Exec(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT "
        "NULL, applied_at_ms INTEGER NOT NULL)"));
    ASSIGN_OR_RETURN(int current, SchemaVersion());
    const auto& all = Migrations();
    int latest = all.empty() ? 0 : all.back().version;
    if (current > latest) {
      return absl::FailedPreconditionError(absl::StrCat(
          path_, ": database schema version ", current,
          " is newer than this contextd understands (", latest, "); upgrade contextd"));
    }
    for (const Migration& m : all) {
      if (m.version <= current) continue;
      absl::Status st = Exec(m.sql);
      if (!st.ok()) {
        return absl::Status(st.code(), absl::StrCat("migration ", m.name, ": ", st.message()));
      }
      ASSIGN_OR_RETURN(
          Statement ins,
          Prepare("INSERT INTO schema_version (version, name, applied_at_ms) "
                  "VALUES (?, ?, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))"));
      ins.Bind(1, static_cast<int64_t>(m.version));
      ins.Bind(2, std::string_view(m.name));
      RETURN_IF_ERROR(ins.Run());
    }
    if (current < latest) {
      ASSIGN_OR_RETURN(Statement check, Prepare("PRAGMA foreign_key_check"));
      ASSIGN_OR_RETURN(bool violated, check.Step());
      if (violated) {
        return absl::FailedPreconditionError(
            absl::StrCat(path_, ": after the migrations, a row of ", check.Text(0), " (rowid ",
                         check.Int(1), ") refers to a missing row of ", check.Text(2),
                         "; nothing was changed: restore the file from a backup or report it"));
      }
    }
    return absl::OkStatus();
  };
  absl::Status st = body();
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

}  // namespace contextd::store
