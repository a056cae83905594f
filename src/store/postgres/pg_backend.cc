#include "store/postgres/pg_backend.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/postgres/pg_branch_store.h"
#include "store/postgres/pg_conversation_store.h"
#include "store/postgres/pg_database.h"
#include "store/postgres/pg_mcp_session_store.h"
#include "store/postgres/pg_memory_store.h"
#include "store/postgres/pg_outbox_store.h"
#include "store/postgres/pg_retention_store.h"
#include "store/postgres/pg_trail_store.h"
#include "store/postgres/pg_transfer.h"

namespace contextd::store {
namespace {

class PgBackend final : public Backend {
 public:
  explicit PgBackend(std::shared_ptr<PgDatabase> db)
      : db_(std::move(db)), sweeper_(PgBranchStore::Create(db_)), owner_(sweeper_->owner()) {}

  std::string_view name() const override { return "postgres"; }
  std::string Describe() const override {
    return absl::StrCat("postgres ", db_->redacted_conninfo(), " (pool ", db_->pool_size(), ")");
  }
  bool shared() const override { return true; }

  absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() override {
    return std::unique_ptr<folding::BranchStore>(PgBranchStore::Create(db_, owner_));
  }
  absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() override {
    return std::unique_ptr<trail::TrailStore>(PgTrailStore::Create(db_));
  }
  absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore() override {
    return std::unique_ptr<folding::OutboxStore>(PgOutboxStore::Create(db_, owner_));
  }
  absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() override {
    return std::unique_ptr<model::ConversationStore>(PgConversationStore::Create(db_));
  }
  absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() override {
    ASSIGN_OR_RETURN(std::unique_ptr<PgMemoryStore> store, PgMemoryStore::Create(db_));
    return std::unique_ptr<memory::MemoryStore>(std::move(store));
  }
  absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() override {
    return std::unique_ptr<McpSessionStore>(PgMcpSessionStore::Create(db_));
  }
  absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() override {
    return std::unique_ptr<RetentionStore>(PgRetentionStore::Create(db_));
  }

  void EnableGroupCommit(std::thread::id group_thread,
                         std::function<void()> on_group_open) override {
    db_->EnableGroupCommit(group_thread, std::move(on_group_open));
  }
  absl::Status CommitGroup() override { return db_->CommitGroup(); }
  void AfterGroupDelivered() override {}

  absl::StatusOr<std::vector<folding::SessionKey>> ListDueSessions(int64_t due_before_ms,
                                                                   int64_t now_ms,
                                                                   int limit) override {
    return sweeper_->ListDueSessions(due_before_ms, now_ms, limit);
  }
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms) override {
    return PgConversationStore::Create(db_)->UsageByProject(tenant, since_ms);
  }
  StoreHealth Health() override {
    StoreHealth h;
    h.backend = "postgres";
    h.status = db_->Ready();  // the conninfo in an error is redacted
    return h;
  }
  absl::StatusOr<int> SchemaVersion() override { return db_->SchemaVersion(); }
  // PostgreSQL gives space back by its own autovacuum.
  absl::StatusOr<VacuumReport> Vacuum() override { return VacuumReport{}; }

  absl::Status ScanStateTables(const std::function<absl::Status(const TableRow&)>& visit) override {
    return ScanPgTables(*db_, visit);
  }
  absl::Status InsertStateRows(const std::vector<TableRow>& rows) override {
    return InsertPgRows(*db_, rows);
  }

 private:
  std::shared_ptr<PgDatabase> db_;
  // Lists due sessions; its owner name is the one every branch store and outbox here uses.
  std::unique_ptr<PgBranchStore> sweeper_;
  const std::string owner_;
};

PgOptions PgOptionsFrom(const BackendOptions& options) {
  PgOptions o;
  o.conninfo = options.postgres_conninfo;
  o.pool_size = options.postgres_pool_size;
  o.migrate = options.migrate;
  return o;
}

// The version before migrating: what schema_version holds (0 for a new database, or one that
// cannot be reached: opening it then reports why).
int PgVersionBefore(const std::string& conninfo) {
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 1);
  int version = 0;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c,
                         "SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE "
                         "(SELECT COALESCE(MAX(version), 0) FROM schema_version) END");
    if (PQresultStatus(r) == PGRES_TUPLES_OK) version = std::atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
  }
  PQfinish(c);
  return version;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenPostgresBackend(const BackendOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(PgOptionsFrom(options)));
  return std::unique_ptr<Backend>(new PgBackend(std::shared_ptr<PgDatabase>(std::move(db))));
}

absl::StatusOr<MigrateResult> MigratePostgres(const BackendOptions& options) {
  MigrateResult result;
  result.backend = "postgres";
  result.was = PgVersionBefore(options.postgres_conninfo);
  BackendOptions migrating = options;
  migrating.migrate = true;
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(PgOptionsFrom(migrating)));
  result.where = db->redacted_conninfo();
  ASSIGN_OR_RETURN(result.version, db->SchemaVersion());
  return result;
}

}  // namespace contextd::store
