// Backend: the one way into contextd's storage. OpenBackend opens (and migrates) the database the
// options name, SQLite or PostgreSQL, and hands out the domain rooms' store interfaces over it;
// it also owns what is not a store's: group commit, the deadline sweep's query, usage per
// project, health, vacuum and the rows an export or import moves. Nothing outside store/ names a
// concrete store (scripts/check_includes.py forbids store/sqlite/ and store/postgres/ there).
// Thread-safety: everything is thread-safe except EnableGroupCommit (before the writes it
// groups); the stores handed out are as their own headers say and may outlive the backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "folding/outbox_store.h"
#include "memory/memory_store.h"
#include "model/conversation_store.h"
#include "store/backend_options.h"
#include "store/mcp_session_store.h"
#include "store/project_usage.h"
#include "store/retention.h"
#include "store/schema.h"
#include "trail/trail_store.h"

namespace contextd::store {

// The database's readiness, for /healthz.
struct StoreHealth {
  std::string backend;                // "sqlite" or "postgres"
  absl::Status status;                // OK, or why the database cannot be used (no secrets)
  std::optional<int> schema_version;  // when the check read it (SQLite)
};

// What Backend::Vacuum did.
struct VacuumReport {
  // False: the database gives space back by itself (PostgreSQL's autovacuum); nothing was done.
  bool vacuumed = false;
  std::string path;           // the file vacuumed
  uint64_t bytes_before = 0;  // its size before
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "sqlite" or "postgres".
  virtual std::string_view name() const = 0;
  // Where the data is, for logs: the SQLite file's path, or "postgres <conninfo, password
  // redacted> (pool N)".
  virtual std::string Describe() const = 0;
  // Whether other contextd instances may share this database (PostgreSQL): then start-up recovery
  // must not force-return live branches (they may be another instance's), deadlines are claimed
  // (BranchStore::ClaimDeadline) and swept (ListDueSessions), and MCP sessions are shared.
  virtual bool shared() const = 0;

  // The engine's stores, on the backend's own connection (SQLite: one connection, shared by the
  // branch, trail and outbox stores; PostgreSQL: the pool): their writes on the group thread join
  // the group once EnableGroupCommit was called. A branch store's writes also write its events'
  // outbox rows (decision 0027). Unavailable/Internal if the database fails.
  virtual absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() = 0;
  // The outbox publishing the rows the branch stores of this backend write (PostgreSQL: as this
  // instance's; SQLite: writes join the group commit, reads on a connection of their own).
  virtual absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore() = 0;
  // Stores used off the engine's executor, never in its group (SQLite: each on a connection of
  // its own; PostgreSQL: the pool).
  virtual absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() = 0;

  // Group commit (decisions 0008, 0026): from now on the writes the engine's stores make on
  // `group_thread` share one transaction per group, each a savepoint; the first write of a group
  // calls `on_group_open` (under the database's lock: it may only schedule CommitGroup). A write
  // that returned OK is durable once CommitGroup returns OK: nothing may acknowledge it before.
  // SQLite groups every write of its one connection, whatever the thread; PostgreSQL only those
  // made on `group_thread`. Call once, before the writes to group.
  virtual void EnableGroupCommit(std::thread::id group_thread,
                                 std::function<void()> on_group_open) = 0;
  // Commits the open group (OK if none is open). On error nothing of the group stays.
  virtual absl::Status CommitGroup() = 0;
  // Upkeep after a committed group's replies went out, which may take a while (SQLite: restarts
  // the WAL past its size limit, decision 0010). On the group thread.
  virtual void AfterGroupDelivered() = 0;

  // Sessions with a live branch whose deadline passed before `due_before_ms` and whose claim ran
  // out (an instance that went away left them): the deadline sweep's work, oldest first, at most
  // `limit`. Empty when the database is not shared.
  virtual absl::StatusOr<std::vector<folding::SessionKey>> ListDueSessions(int64_t due_before_ms,
                                                                           int64_t now_ms,
                                                                           int limit) = 0;
  // The model gateway's usage per (tenant, project) since `since_ms` (`contextd usage`); an empty
  // tenant means every tenant.
  virtual absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                                   int64_t since_ms) = 0;
  // A cheap readiness check (SQLite: the schema version on the engine's connection; PostgreSQL:
  // the server accepts connections, remembered for a second, outside the pool).
  virtual StoreHealth Health() = 0;
  // The highest migration applied.
  virtual absl::StatusOr<int> SchemaVersion() = 0;
  // Gives freed space back to the file system for good (SQLite: switches the file to incremental
  // vacuum with one VACUUM, which holds the write lock throughout: `contextd trail prune
  // --vacuum`, not a running server). PostgreSQL: nothing to do.
  virtual absl::StatusOr<VacuumReport> Vacuum() = 0;

  // Every row of StateTables(), table by table in that order, each in its creation order, as of
  // one snapshot, handed to `visit` (its error stops the scan and is returned).
  virtual absl::Status ScanStateTables(
      const std::function<absl::Status(const TableRow&)>& visit) = 0;
  // Inserts `rows` in one transaction, all or nothing, keeping their ids and numbers; then marks
  // each session's oldest root scope as the one OpenSessionRoot finds (decision 0028).
  // FailedPrecondition if the database already holds branches, scopes, conversations or
  // memories; an insert's error names its table.
  virtual absl::Status InsertStateRows(const std::vector<TableRow>& rows) = 0;
};

// Opens the database `options` names and migrates it (PostgreSQL: unless options.migrate is off,
// then an older schema is FailedPrecondition). Unavailable if it cannot be reached (a PostgreSQL
// message carries the redacted conninfo); FailedPrecondition if its schema is newer than this
// binary; Internal/Unavailable from SQLite.
absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options);

// What `contextd migrate` did.
struct MigrateResult {
  std::string backend;     // "sqlite" or "postgres"
  std::string where;       // the file, or the redacted conninfo
  int version = 0;         // the schema version now
  std::optional<int> was;  // PostgreSQL: the version before (0 for a new database)
  bool new_file = false;   // SQLite: the file did not exist before
};

// Brings the schema of the database `options` names up to this binary's (options.migrate is
// implied): PostgreSQL under the migration advisory lock, so it may run while instances start.
// Errors as OpenBackend.
absl::StatusOr<MigrateResult> MigrateStore(const BackendOptions& options);

}  // namespace contextd::store
