// The SQLite Backend (store/backend.h): one database file; the engine's connection is shared by
// the branch, trail and outbox stores and carries the group commit, the other stores open
// connections of their own. Internal to store/: OpenBackend and MigrateStore call these.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "store/backend.h"
#include "store/backend_options.h"

namespace contextd::store {

// Opens (creating and migrating) options.sqlite_path. Errors as Database::Open.
absl::StatusOr<std::unique_ptr<Backend>> OpenSqliteBackend(const BackendOptions& options);

// Migrates options.sqlite_path and says whether the file is new.
absl::StatusOr<MigrateResult> MigrateSqlite(const BackendOptions& options);

}  // namespace contextd::store
