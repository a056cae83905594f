#include "store/sqlite/sqlite_backend.h"

#include <filesystem>
#include <mutex>
#include <utility>

#include "base/status_macros.h"
#include "store/sqlite/database.h"
#include "store/sqlite/search_index.h"
#include "store/sqlite/sqlite_branch_store.h"
#include "store/sqlite/sqlite_conversation_store.h"
#include "store/sqlite/sqlite_mcp_session_store.h"
#include "store/sqlite/sqlite_memory_store.h"
#include "store/sqlite/sqlite_outbox_store.h"
#include "store/sqlite/sqlite_retention_store.h"
#include "store/sqlite/sqlite_trail_store.h"
#include "store/sqlite/sqlite_transfer.h"

namespace contextd::store {
namespace {

// Moves a concrete store into the interface it implements.
template <typename Interface, typename Concrete>
absl::StatusOr<std::unique_ptr<Interface>> AsInterface(
    absl::StatusOr<std::unique_ptr<Concrete>> opened) {
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<Interface>(std::move(*opened));
}

class SqliteBackend final : public Backend {
 public:
  SqliteBackend(std::string path, DatabaseOptions db_options, SearchIndexOptions search,
                std::shared_ptr<Database> db)
      : path_(std::move(path)), db_options_(db_options), search_(search), db_(std::move(db)) {}

  std::string_view name() const override { return "sqlite"; }
  std::string Describe() const override { return path_; }
  bool shared() const override { return false; }

  absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() override {
    return AsInterface<folding::BranchStore>(SqliteBranchStore::Create(db_));
  }
  absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() override {
    return AsInterface<trail::TrailStore>(SqliteTrailStore::Create(db_, search_));
  }
  absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore() override {
    return AsInterface<folding::OutboxStore>(SqliteOutboxStore::Create(db_));
  }
  absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() override {
    return AsInterface<model::ConversationStore>(SqliteConversationStore::Open(path_, db_options_));
  }
  absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() override {
    return AsInterface<memory::MemoryStore>(SqliteMemoryStore::Open(path_, db_options_));
  }
  absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() override {
    return AsInterface<McpSessionStore>(SqliteMcpSessionStore::Open(path_));
  }
  absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() override {
    return AsInterface<RetentionStore>(SqliteRetentionStore::Open(path_));
  }

  // One connection: every write on it joins the open group, whatever the thread.
  void EnableGroupCommit(std::thread::id, std::function<void()> on_group_open) override {
    db_->EnableGroupCommit(std::move(on_group_open));
  }
  absl::Status CommitGroup() override { return db_->CommitGroup(); }
  void AfterGroupDelivered() override { db_->RestartWalIfDue(); }

  // One process writes a SQLite file: no other instance can leave a deadline behind.
  absl::StatusOr<std::vector<folding::SessionKey>> ListDueSessions(int64_t, int64_t, int) override {
    return std::vector<folding::SessionKey>{};
  }
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms) override {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteConversationStore> store,
                     SqliteConversationStore::Open(path_, db_options_));
    return store->UsageByProject(tenant, since_ms);
  }
  StoreHealth Health() override {
    StoreHealth h;
    h.backend = "sqlite";
    absl::StatusOr<int> version = SchemaVersion();
    if (version.ok()) {
      h.schema_version = *version;
    } else {
      h.status = version.status();
    }
    return h;
  }
  absl::StatusOr<int> SchemaVersion() override {
    std::lock_guard<std::mutex> lock(db_->mutex());
    return db_->SchemaVersion();
  }
  absl::StatusOr<VacuumReport> Vacuum() override {
    VacuumReport report;
    std::error_code ec;
    report.path = path_;
    report.bytes_before = std::filesystem::file_size(path_, ec);
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteRetentionStore> retention,
                     SqliteRetentionStore::Open(path_));
    RETURN_IF_ERROR(retention->SwitchToIncrementalVacuum());
    report.vacuumed = true;
    return report;
  }

  absl::Status ScanStateTables(const std::function<absl::Status(const TableRow&)>& visit) override {
    return ScanSqliteTables(*db_, visit);
  }
  absl::Status InsertStateRows(const std::vector<TableRow>& rows) override {
    return InsertSqliteRows(*db_, path_, rows);
  }

 private:
  const std::string path_;
  const DatabaseOptions db_options_;  // for the stores on connections of their own
  const SearchIndexOptions search_;
  std::shared_ptr<Database> db_;  // the engine's connection
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenSqliteBackend(const BackendOptions& options) {
  DatabaseOptions db_options;
  db_options.create_directories = options.create_directories;
  SearchIndexOptions search;
  if (options.one_shot) {
    db_options.background_checkpoint_ms = 0;
    search.interval_ms = 0;  // a search brings the index up to date itself
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(options.sqlite_path, db_options));
  return std::unique_ptr<Backend>(new SqliteBackend(options.sqlite_path, db_options, search,
                                                    std::shared_ptr<Database>(std::move(db))));
}

absl::StatusOr<MigrateResult> MigrateSqlite(const BackendOptions& options) {
  MigrateResult result;
  result.backend = "sqlite";
  result.where = options.sqlite_path;
  std::error_code ec;
  result.new_file = !std::filesystem::exists(options.sqlite_path, ec);
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, OpenSqliteBackend(options));
  ASSIGN_OR_RETURN(result.version, backend->SchemaVersion());
  return result;
}

}  // namespace contextd::store
