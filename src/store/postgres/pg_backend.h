// The PostgreSQL Backend (store/backend.h): one connection pool shared by every store it opens;
// the branch stores and the outbox of one backend act as one instance (one owner name for
// deadline claims and outbox rows). Internal to store/: OpenBackend and MigrateStore call these.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "store/backend.h"
#include "store/backend_options.h"

namespace contextd::store {

// Connects and (options.migrate) migrates. Errors as PgDatabase::Open.
absl::StatusOr<std::unique_ptr<Backend>> OpenPostgresBackend(const BackendOptions& options);

// Migrates the database and says which version it had before (0 for a new one).
absl::StatusOr<MigrateResult> MigratePostgres(const BackendOptions& options);

}  // namespace contextd::store
