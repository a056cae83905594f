// PgDatabase: contextd's PostgreSQL database through libpq: a bounded pool of connections, each
// with its statements prepared on first use (PQprepare, then PQexecPrepared), transactions
// (Write: BEGIN ... COMMIT, ROLLBACK on any error, committed before it returns, so a reply that
// follows is durable), reads with one retry on a lost connection, the numbered migrations of
// pg_migrations.h applied at open under an advisory lock (two instances starting at once migrate
// once), and group commit (decision 0026): the writes of one thread (the engine executor) share
// one transaction on one connection until CommitGroup. Thread-safe: each call takes a connection
// of its own from the pool, except the group thread's while a group is open (the group's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/rows.h"

struct pg_conn;
struct pg_result;

namespace contextd::store {

struct PgOptions {
  // A libpq conninfo ("host=... dbname=...") or URL ("postgresql://user@host:5432/db").
  std::string conninfo;
  // Connections kept at most; a caller waits for one up to acquire_timeout_ms (then Unavailable).
  int pool_size = 8;
  int acquire_timeout_ms = 10'000;
  int connect_timeout_s = 10;
  // Apply pending migrations at Open (contextd serve, contextd migrate); off: refuse a database
  // whose schema is older than this binary (FailedPrecondition).
  bool migrate = true;
};

// The conninfo or URL with any password replaced by "****", for logs and errors.
std::string RedactConninfo(std::string_view conninfo);

// One parameter of a statement: text (a number's decimal form too), bytes (bytea, sent in
// binary), or NULL.
struct PgParam {
  std::optional<std::string> value;
  bool binary = false;
  PgParam(std::string_view s) : value(std::string(s)) {}  // NOLINT: implicit on purpose
  PgParam(const std::string& s) : value(s) {}             // NOLINT
  PgParam(const char* s) : value(std::string(s)) {}       // NOLINT
  PgParam(int64_t v) : value(std::to_string(v)) {}        // NOLINT
  PgParam(int v) : value(std::to_string(v)) {}            // NOLINT
  PgParam(bool v) : value(v ? "true" : "false") {}        // NOLINT
  static PgParam Null() { return PgParam(); }
  static PgParam Bytes(std::string_view b) {
    PgParam p(b);
    p.binary = true;
    return p;
  }

 private:
  PgParam() = default;
};

// The rows of one statement (text format). Owns its PGresult.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* r) : r_(r) {}
  ~PgResult();
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  // Rows changed by an INSERT/UPDATE/DELETE.
  int64_t affected() const;
  bool IsNull(int row, int col) const;
  std::string Text(int row, int col) const;
  int64_t Int(int row, int col) const;
  double Real(int row, int col) const;
  bool Bool(int row, int col) const;
  // A bytea column (text format "\x..." decoded).
  std::string Bytes(int row, int col) const;

 private:
  pg_result* r_ = nullptr;
};

// Row `row` of a PgResult as a store::Row (store/rows.h), for the shared mappers.
class PgRow final : public Row {
 public:
  PgRow(const PgResult& result, int row) : result_(result), row_(row) {}
  bool IsNull(int col) const override { return result_.IsNull(row_, col); }
  int64_t Int(int col) const override { return result_.Int(row_, col); }
  std::string Text(int col) const override { return result_.Text(row_, col); }
  std::string Bytes(int col) const override { return result_.Bytes(row_, col); }
  bool Bool(int col) const override { return result_.Bool(row_, col); }

 private:
  const PgResult& result_;
  const int row_;
};

// One pooled connection, lent to a callback of PgDatabase; not to be kept.
class PgConn {
 public:
  // Runs `sql` ($1, $2, ... placeholders) with `params`, prepared once per connection.
  // AlreadyExists (unique violation), FailedPrecondition (other constraint), Unavailable
  // (connection lost, serialization failure, deadlock), Internal otherwise; the message
  // names the statement's first words and the server's message.
  absl::StatusOr<PgResult> Exec(std::string_view sql, const std::vector<PgParam>& params = {});
  // Runs `sql` (several statements allowed, no parameters) unprepared.
  absl::Status ExecScript(std::string_view sql);
  // Sends `sql` (as ExecScript) without waiting for its answer: the next call on this connection
  // collects it first. If it failed, that call and every later one returns its error (the
  // connection is not reused).
  absl::Status SendScript(std::string_view sql);
  // Collects the answer of a SendScript, if any: its error, or the earlier one kept.
  absl::Status Drain();
  bool broken() const;
  // The SQLSTATE of the last failed Exec ("23503": foreign key violation, ...), "" if none.
  const std::string& last_sqlstate() const { return last_sqlstate_; }

 private:
  friend class PgDatabase;
  explicit PgConn(pg_conn* c) : conn_(c) {}
  absl::Status Error(std::string_view sql, pg_result* r) const;
  pg_conn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // sql -> statement name
  mutable std::string last_sqlstate_;
  std::string pending_;    // the SendScript whose answer is not collected yet, or ""
  absl::Status deferred_;  // a SendScript that failed: the connection is done
};

class PgDatabase {
 public:
  // Connects once (to fail early with a clear error), then migrates (options.migrate) under
  // pg_advisory_xact_lock. Unavailable if the server cannot be reached (the message carries the
  // redacted conninfo); FailedPrecondition if the schema is newer than this binary (or older and
  // migrate is off).
  static absl::StatusOr<std::unique_ptr<PgDatabase>> Open(const PgOptions& options);
  ~PgDatabase();
  PgDatabase(const PgDatabase&) = delete;
  PgDatabase& operator=(const PgDatabase&) = delete;

  // Runs `body` in one transaction (BEGIN ... COMMIT): durable when it returns OK; on an error of
  // `body` or of COMMIT nothing of it stays. Not retried (the caller decides).
  // On the group thread once EnableGroupCommit was called: the first write after a group commit
  // takes a connection, opens the group transaction and calls `on_group_open`; each write is a
  // savepoint inside it (an error of `body` undoes that write only). OK then means "applied,
  // durable once CommitGroup returns OK": the caller must not acknowledge the write before that
  // (server/group_commit.h holds the replies). If the group itself breaks (connection lost, a
  // savepoint that cannot be released), it is rolled back, this write returns the error and
  // CommitGroup reports it to every writer of the group.
  absl::Status Write(const std::function<absl::Status(PgConn&)>& body);
  // Runs `body` (reads only: it may run twice) outside a transaction; retried once on a fresh
  // connection if the connection was lost. On the group thread while a group is open: inside the
  // group (it sees the group's writes), not retried; an error of `body` leaves the group as it
  // was.
  absl::Status Read(const std::function<absl::Status(PgConn&)>& body);

  // Switches the writes and reads made on thread `group_thread` to group mode (above). Call
  // before the writes that should be grouped, with no group open (a second call replaces the
  // first; not while the group thread may be writing). `on_group_open` is called on the group
  // thread, under this database's group lock: it must not use the database, only schedule
  // CommitGroup. Writes on other threads keep committing on their own.
  void EnableGroupCommit(std::thread::id group_thread, std::function<void()> on_group_open);
  // Commits the open group, if any (OK if none), and returns its connection to the pool. On error
  // (COMMIT refused, e.g. by a deferred constraint; connection lost) nothing of the group stays and
  // the error says why; a group broken earlier reports that error here, once. Any thread (the
  // group thread in contextd).
  absl::Status CommitGroup();
  // True while a group transaction is open. Any thread.
  bool group_open();

  // The highest migration applied.
  absl::StatusOr<int> SchemaVersion();
  // Readiness for /healthz: whether the server accepts connections (PQping, outside the pool, so
  // a busy pool is not "unready"), remembered for a second. Unavailable with the redacted
  // conninfo otherwise.
  absl::Status Ready();
  const std::string& redacted_conninfo() const { return redacted_; }
  int pool_size() const { return options_.pool_size; }

 private:
  explicit PgDatabase(PgOptions options);
  absl::StatusOr<std::unique_ptr<PgConn>> Acquire();
  void Release(std::unique_ptr<PgConn> conn);
  absl::StatusOr<std::unique_ptr<PgConn>> Connect();
  absl::Status Migrate(PgConn& conn);
  bool OnGroupThread() const;
  // Group mode's Write and Read. Caller holds group_mu_.
  absl::Status GroupWriteLocked(const std::function<absl::Status(PgConn&)>& body);
  // Rolls the open group back (if any) and returns its connection to the pool.
  void RollBackGroupLocked();
  // RollBackGroupLocked, and records `why` for CommitGroup (the first reason is kept).
  void FailGroupLocked(absl::Status why);

  PgOptions options_;
  std::string redacted_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConn>> idle_;
  int open_ = 0;  // connections lent or idle
  // Ready()'s last answer and when (steady clock, ms), under ready_mu_.
  std::mutex ready_mu_;
  absl::Status ready_;
  int64_t ready_at_ms_ = -1;
  // Group commit. group_thread_ is written once before group_mode_ is set (release).
  std::atomic<bool> group_mode_{false};
  std::thread::id group_thread_;
  // Held by the group thread across a grouped write or read (so CommitGroup from another thread
  // waits for it); never while waiting for the pool's mu_ in a way mu_'s holders could need.
  std::mutex group_mu_;
  std::function<void()> on_group_open_;  // under group_mu_
  std::unique_ptr<PgConn> group_conn_;   // the open group's connection, under group_mu_
  absl::Status group_failed_;            // a group rolled back before its commit, group_mu_
};

}  // namespace contextd::store
