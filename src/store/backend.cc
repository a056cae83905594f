#include "store/backend.h"

#include "store/postgres/pg_backend.h"
#include "store/sqlite/sqlite_backend.h"

namespace contextd::store {

absl::StatusOr<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options) {
  if (options.kind == BackendKind::kPostgres) return OpenPostgresBackend(options);
  return OpenSqliteBackend(options);
}

absl::StatusOr<MigrateResult> MigrateStore(const BackendOptions& options) {
  if (options.kind == BackendKind::kPostgres) return MigratePostgres(options);
  return MigrateSqlite(options);
}

}  // namespace contextd::store
