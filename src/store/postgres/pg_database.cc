#include "store/postgres/pg_database.h"

#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/postgres/pg_migrations.h"

namespace contextd::store {
namespace {

// The statement's first words, for error messages (never its parameters).
std::string_view Head(std::string_view sql) {
  while (!sql.empty() && (sql.front() == ' ' || sql.front() == '\n')) sql.remove_prefix(1);
  return sql.substr(0, std::min<size_t>(sql.size(), 48));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

}  // namespace

std::string RedactConninfo(std::string_view conninfo) {
  std::string s(conninfo);
  // URL form: scheme://user:password@host
  static const std::regex kUrl(R"(^(postgres(?:ql)?://[^:/@]*):[^@]*@)");
  s = std::regex_replace(s, kUrl, "$1:****@");
  // URL query parameter and key=value form: password=...
  static const std::regex kKey(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*))");
  s = std::regex_replace(s, kKey, "$1****");
  return s;
}

// --- PgResult ---

PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

int PgResult::rows() const { return r_ == nullptr ? 0 : PQntuples(r_); }
int64_t PgResult::affected() const {
  const char* n = r_ == nullptr ? "" : PQcmdTuples(r_);
  return n[0] == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string PgResult::Text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col));
}
int64_t PgResult::Int(int row, int col) const {
  return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}
double PgResult::Real(int row, int col) const {
  return std::strtod(PQgetvalue(r_, row, col), nullptr);
}
bool PgResult::Bool(int row, int col) const { return PQgetvalue(r_, row, col)[0] == 't'; }
std::string PgResult::Bytes(int row, int col) const {
  const char* v = PQgetvalue(r_, row, col);
  size_t n = PQgetlength(r_, row, col);
  if (n < 2 || v[0] != '\\' || v[1] != 'x') return std::string(v, n);  // not hex: as is
  std::string out;
  out.reserve((n - 2) / 2);
  for (size_t i = 2; i + 1 < n; i += 2) {
    out.push_back(static_cast<char>(HexValue(v[i]) * 16 + HexValue(v[i + 1])));
  }
  return out;
}

// --- PgConn ---

bool PgConn::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

absl::Status PgConn::Error(std::string_view sql, PGresult* r) const {
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string code = state != nullptr ? state : "";
  last_sqlstate_ = code;
  std::string msg = r != nullptr ? PQresultErrorMessage(r) : "";
  if (msg.empty()) msg = PQerrorMessage(conn_);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  std::string text = absl::StrCat("postgres: ", std::string(Head(sql)), ": ", msg);
  if (broken() || code.rfind("08", 0) == 0 || code == "57P01" || code == "57P02" ||
      code == "57P03" || code == "40001" || code == "40P01" || code == "53300") {
    return absl::UnavailableError(text);
  }
  if (code == "23505") return absl::AlreadyExistsError(text);
  if (code.rfind("23", 0) == 0) return absl::FailedPreconditionError(text);
  return absl::InternalError(text);
}

absl::Status PgConn::SendScript(std::string_view sql) {
  RETURN_IF_ERROR(Drain());
  std::string text(sql);
  if (PQsendQuery(conn_, text.c_str()) == 0) {
    deferred_ = Error(sql, nullptr);
    return deferred_;
  }
  pending_ = std::move(text);
  return absl::OkStatus();
}

absl::Status PgConn::Drain() {
  if (pending_.empty()) return deferred_;
  absl::Status st;
  while (PGresult* r = PQgetResult(conn_)) {
    ExecStatusType s = PQresultStatus(r);
    if (st.ok() && s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) st = Error(pending_, r);
    PQclear(r);
  }
  pending_.clear();
  if (!st.ok()) deferred_ = st;
  return deferred_;
}

absl::StatusOr<PgResult> PgConn::Exec(std::string_view sql, const std::vector<PgParam>& params) {
  RETURN_IF_ERROR(Drain());
  std::string key(sql);
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    std::string name = absl::StrCat("s", prepared_.size());
    PGresult* prep = PQprepare(conn_, name.c_str(), key.c_str(), 0, nullptr);
    if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
      absl::Status st = Error(sql, prep);
      PQclear(prep);
      return st;
    }
    PQclear(prep);
    it = prepared_.emplace(std::move(key), std::move(name)).first;
  }
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size());
  std::vector<int> formats(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i].value ? params[i].value->data() : nullptr;
    lengths[i] = params[i].value ? static_cast<int>(params[i].value->size()) : 0;
    formats[i] = params[i].binary ? 1 : 0;
  }
  PGresult* r = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(params.size()),
                               values.data(), lengths.data(), formats.data(), 0);
  ExecStatusType s = PQresultStatus(r);
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    absl::Status st = Error(sql, r);
    PQclear(r);
    return st;
  }
  return PgResult(r);
}

absl::Status PgConn::ExecScript(std::string_view sql) {
  RETURN_IF_ERROR(Drain());
  std::string text(sql);
  PGresult* r = PQexec(conn_, text.c_str());
  ExecStatusType s = PQresultStatus(r);
  absl::Status st;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) st = Error(sql, r);
  PQclear(r);
  return st;
}

// --- PgDatabase ---

PgDatabase::PgDatabase(PgOptions options)
    : options_(std::move(options)), redacted_(RedactConninfo(options_.conninfo)) {
  if (options_.pool_size < 1) options_.pool_size = 1;
}

PgDatabase::~PgDatabase() {
  {
    // A group never committed is rolled back with its connection: nobody heard of its writes.
    std::lock_guard<std::mutex> group_lock(group_mu_);
    if (group_conn_ != nullptr) PQfinish(group_conn_->conn_);
    group_conn_.reset();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : idle_) PQfinish(c->conn_);
  idle_.clear();
}

absl::StatusOr<std::unique_ptr<PgConn>> PgDatabase::Connect() {
  std::string timeout = std::to_string(options_.connect_timeout_s);
  // expand_dbname=1: `dbname` holds the whole conninfo or URL; it comes last, so that what it
  // sets wins over these defaults.
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), "contextd", options_.conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 1);
  if (c == nullptr) return absl::UnavailableError("postgres: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return absl::UnavailableError(
        absl::StrCat("cannot connect to postgres (", redacted_, "): ", RedactConninfo(msg)));
  }
  auto conn = std::unique_ptr<PgConn>(new PgConn(c));
  // What the stores read and write assumes these, whatever the server's or role's defaults.
  absl::Status set = conn->ExecScript("SET client_encoding = 'UTF8'; SET bytea_output = 'hex'");
  if (!set.ok()) {
    PQfinish(c);
    return absl::UnavailableError(absl::StrCat("postgres (", redacted_, "): ", set.message()));
  }
  return conn;
}

absl::StatusOr<std::unique_ptr<PgConn>> PgDatabase::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.acquire_timeout_ms);
  for (;;) {
    if (!idle_.empty()) {
      std::unique_ptr<PgConn> c = std::move(idle_.back());
      idle_.pop_back();
      if (!c->broken()) return c;
      PQfinish(c->conn_);
      --open_;
      continue;
    }
    if (open_ < options_.pool_size) {
      ++open_;
      lock.unlock();
      auto c = Connect();
      if (!c.ok()) {
        lock.lock();
        --open_;
        cv_.notify_one();
      }
      return c;
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.pool_size) {
      return absl::UnavailableError(absl::StrCat("postgres: no connection free in the pool of ",
                                                 options_.pool_size, " within ",
                                                 options_.acquire_timeout_ms, " ms"));
    }
  }
}

void PgDatabase::Release(std::unique_ptr<PgConn> conn) {
  std::lock_guard<std::mutex> lock(mu_);
  // A connection left inside a transaction (an error while rolling back) is not reused.
  if (!conn->Drain().ok() || conn->broken() || PQtransactionStatus(conn->conn_) != PQTRANS_IDLE) {
    PQfinish(conn->conn_);
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  cv_.notify_one();
}

absl::Status PgDatabase::Write(const std::function<absl::Status(PgConn&)>& body) {
  if (OnGroupThread()) {
    std::lock_guard<std::mutex> lock(group_mu_);
    return GroupWriteLocked(body);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn, Acquire());
  absl::Status st = conn->ExecScript("BEGIN");
  if (st.ok()) {
    st = body(*conn);
    if (st.ok()) {
      st = conn->ExecScript("COMMIT");
    } else if (!conn->broken()) {
      conn->ExecScript("ROLLBACK").IgnoreError();
    }
  }
  Release(std::move(conn));
  return st;
}

absl::Status PgDatabase::Read(const std::function<absl::Status(PgConn&)>& body) {
  if (OnGroupThread()) {
    std::lock_guard<std::mutex> lock(group_mu_);
    if (group_conn_ != nullptr) {
      // Inside the group, so that it sees the group's writes (as SQLite's one connection does).
      absl::Status st = body(*group_conn_);
      absl::Status previous = group_conn_->Drain();  // the last write's end, if body ran nothing
      if (!previous.ok()) {
        FailGroupLocked(previous);
        return st.ok() ? previous : st;
      }
      if (!st.ok() && PQtransactionStatus(group_conn_->conn_) != PQTRANS_INTRANS) {
        // A failed statement aborted the transaction: back to the last write's end.
        absl::Status undone = group_conn_->ExecScript("ROLLBACK TO SAVEPOINT w");
        if (!undone.ok() || PQtransactionStatus(group_conn_->conn_) != PQTRANS_INTRANS) {
          FailGroupLocked(undone.ok() ? absl::AbortedError("postgres: the group transaction "
                                                           "was rolled back")
                                      : undone);
        }
      }
      return st;
    }
  }
  absl::Status st;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn, Acquire());
    st = body(*conn);
    bool lost = !st.ok() && conn->broken();
    Release(std::move(conn));
    if (!lost) return st;
  }
  return st;
}

bool PgDatabase::OnGroupThread() const {
  return group_mode_.load(std::memory_order_acquire) && std::this_thread::get_id() == group_thread_;
}

void PgDatabase::EnableGroupCommit(std::thread::id group_thread,
                                   std::function<void()> on_group_open) {
  std::lock_guard<std::mutex> lock(group_mu_);
  on_group_open_ = std::move(on_group_open);
  group_thread_ = group_thread;
  group_mode_.store(true, std::memory_order_release);
}

absl::Status PgDatabase::GroupWriteLocked(const std::function<absl::Status(PgConn&)>& body) {
  if (group_conn_ == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn, Acquire());
    // Savepoint `w` is always set at the end of the group's last write: a write's body runs
    // inside it, and ends with one round trip (release it and set it again, or roll back to it).
    absl::Status st = conn->ExecScript("BEGIN; SAVEPOINT w");
    if (!st.ok()) {
      if (!conn->broken()) conn->ExecScript("ROLLBACK").IgnoreError();
      Release(std::move(conn));
      return st;
    }
    group_conn_ = std::move(conn);
    if (on_group_open_) on_group_open_();
  }
  absl::Status st = body(*group_conn_);
  absl::Status ended = group_conn_->Drain();  // the previous write's end
  if (ended.ok() && st.ok()) {
    // Sent without waiting: its answer is collected by the next statement on the connection
    // (which fails, and with it the group, if this did), and the executor goes on meanwhile.
    ended = group_conn_->SendScript("RELEASE SAVEPOINT w; SAVEPOINT w");
  } else if (ended.ok()) {
    // Undo this write only (an error of a statement also aborted the transaction: the rollback
    // to the savepoint clears that); the group's earlier writes stay.
    ended = group_conn_->ExecScript("ROLLBACK TO SAVEPOINT w");
    if (ended.ok() && PQtransactionStatus(group_conn_->conn_) != PQTRANS_INTRANS) {
      ended = absl::AbortedError("postgres: the group transaction was rolled back");
    }
  }
  if (!ended.ok()) {
    // The group is in an unknown state: roll it all back, so that CommitGroup reports the loss
    // to every writer in it instead of committing part of it.
    FailGroupLocked(ended);
    return st.ok() ? ended : st;
  }
  return st;
}

void PgDatabase::RollBackGroupLocked() {
  if (group_conn_ == nullptr) return;
  if (!group_conn_->broken()) group_conn_->ExecScript("ROLLBACK").IgnoreError();
  Release(std::move(group_conn_));
}

void PgDatabase::FailGroupLocked(absl::Status why) {
  RollBackGroupLocked();
  if (group_failed_.ok()) group_failed_ = std::move(why);
}

absl::Status PgDatabase::CommitGroup() {
  std::lock_guard<std::mutex> lock(group_mu_);
  if (!group_failed_.ok()) {
    // Writes since the failure went into a new group; they are lost with the earlier ones, so
    // that everyone waiting on this commit hears the same answer.
    RollBackGroupLocked();
    return std::exchange(group_failed_, absl::OkStatus());
  }
  if (group_conn_ == nullptr) return absl::OkStatus();
  std::unique_ptr<PgConn> conn = std::move(group_conn_);
  absl::Status st = conn->Drain();  // the last write's end
  // COMMIT of an aborted transaction "succeeds" as a ROLLBACK: check the state and the tag.
  if (st.ok() && PQtransactionStatus(conn->conn_) != PQTRANS_INTRANS) {
    st = absl::AbortedError("postgres: the group transaction was rolled back before its commit");
  }
  if (st.ok()) {
    PGresult* r = PQexec(conn->conn_, "COMMIT");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      st = conn->Error("COMMIT", r);
    } else if (std::strcmp(PQcmdStatus(r), "COMMIT") != 0) {
      st = absl::AbortedError(
          absl::StrCat("postgres: COMMIT of the group answered ", PQcmdStatus(r)));
    }
    PQclear(r);
  }
  if (!st.ok() && !conn->broken() && PQtransactionStatus(conn->conn_) != PQTRANS_IDLE) {
    conn->ExecScript("ROLLBACK").IgnoreError();
  }
  Release(std::move(conn));
  return st;
}

bool PgDatabase::group_open() {
  std::lock_guard<std::mutex> lock(group_mu_);
  return group_conn_ != nullptr;
}

absl::Status PgDatabase::Ready() {
  std::lock_guard<std::mutex> lock(ready_mu_);
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  if (ready_at_ms_ >= 0 && now - ready_at_ms_ < 1000) return ready_;
  std::string timeout = std::to_string(std::min(options_.connect_timeout_s, 2));
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), options_.conninfo.c_str(), nullptr};
  PGPing ping = PQpingParams(keys, values, 1);
  ready_ = ping == PQPING_OK
               ? absl::OkStatus()
               : absl::UnavailableError(absl::StrCat(
                     "postgres (", redacted_, ") ",
                     ping == PQPING_REJECT ? "rejects connections" : "does not answer"));
  ready_at_ms_ = now;
  return ready_;
}

absl::StatusOr<std::unique_ptr<PgDatabase>> PgDatabase::Open(const PgOptions& options) {
  if (options.conninfo.empty()) {
    return absl::InvalidArgumentError("store.postgres.url is empty");
  }
  std::unique_ptr<PgDatabase> db(new PgDatabase(options));
  ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn, db->Acquire());
  absl::Status st = conn->ExecScript("BEGIN");
  if (st.ok()) st = db->Migrate(*conn);
  if (st.ok()) {
    st = conn->ExecScript("COMMIT");
  } else if (!conn->broken()) {
    conn->ExecScript("ROLLBACK").IgnoreError();
  }
  db->Release(std::move(conn));
  RETURN_IF_ERROR(st);
  return db;
}

absl::Status PgDatabase::Migrate(PgConn& conn) {
  // Held to the end of the transaction: a second instance waits here, then finds nothing to do.
  RETURN_IF_ERROR(conn.Exec("SELECT pg_advisory_xact_lock($1)", {kPgMigrationLock}).status());
  RETURN_IF_ERROR(
      conn.ExecScript("SET LOCAL client_min_messages = warning;"
                      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                      "name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"));
  ASSIGN_OR_RETURN(PgResult r, conn.Exec("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
  int current = static_cast<int>(r.Int(0, 0));
  const std::vector<Migration>& all = PgMigrations();
  int latest = all.empty() ? 0 : all.back().version;
  if (current > latest) {
    return absl::FailedPreconditionError(
        absl::StrCat("the postgres database (", redacted_, ") has schema version ", current,
                     ", newer than this contextd (", latest, "): upgrade contextd"));
  }
  if (current < latest && !options_.migrate) {
    return absl::FailedPreconditionError(
        absl::StrCat("the postgres database (", redacted_, ") has schema version ", current,
                     "; this contextd needs ", latest, ": run `contextd migrate`"));
  }
  for (const Migration& m : all) {
    if (m.version <= current) continue;
    absl::Status st = conn.ExecScript(m.sql);
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("migration ", m.name, ": ", st.message()));
    }
    RETURN_IF_ERROR(conn.Exec("INSERT INTO schema_version (version, name, applied_at_ms) VALUES "
                              "($1, $2, (extract(epoch from clock_timestamp()) * 1000)::bigint)",
                              {m.version, m.name})
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> PgDatabase::SchemaVersion() {
  int version = 0;
  RETURN_IF_ERROR(Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
    version = static_cast<int>(r.Int(0, 0));
    return absl::OkStatus();
  }));
  return version;
}

}  // namespace contextd::store
