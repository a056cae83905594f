// The store commands: `contextd migrate` brings the configured store's schema up to this
// binary's (SQLite: the file in the data directory; PostgreSQL: store.postgres.url, under the
// migration advisory lock, so it may run while other instances start); `contextd export` writes
// the configured store's state as JSON Lines, `contextd import` reads them into an empty store
// (store/store_transfer.h): together they move a user between SQLite and PostgreSQL. Also how
// every one-shot command opens the store (store/backend.h). Not thread-safe (commands).
#pragma once

#include <istream>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "server/config.h"
#include "store/backend.h"
#include "store/backend_options.h"

namespace contextd::cli {

// Migrates and prints "<backend> <where>: schema version N (was M)" on `out`. Returns the exit
// code: 0 on success, 2 with the reason on `err` (cannot connect, a schema newer than this
// binary, a failed migration: nothing of it applied).
int RunMigrateCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err);

// Writes the store's state to `out`; a line on `err` says how many rows. 0, or 2 with the reason.
int RunExportCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err);

// The backend options of a one-shot command: `store` (store.backend, store.postgres.url with one
// connection) or the SQLite file contextd.db in `data_dir` (empty: the default data dir), with
// no background threads. `migrate` off (trail, usage, memory: they read and write rows but must
// not change the schema): an older PostgreSQL schema is refused, FailedPrecondition naming the
// versions (run `contextd migrate`). `create`: SQLite may create the file's directory.
store::BackendOptions CommandBackendOptions(const server::StoreConfig& store,
                                            const std::string& data_dir, bool migrate = false,
                                            bool create = false);

// Opens CommandBackendOptions(store, data_dir, false, create). SQLite: NotFound "no contextd
// database at <path>" when the file does not exist, unless `create`.
absl::StatusOr<std::unique_ptr<store::Backend>> OpenCommandBackend(const server::StoreConfig& store,
                                                                   const std::string& data_dir,
                                                                   bool create = false);

// Reads an export from `in` into the configured (empty) store, all or nothing; a line on `err`
// says how many rows. 0, or 2 with the reason (a store that already holds state, a bad line).
int RunImportCommand(const server::ServerConfig& config, std::istream& in, std::ostream& err);

}  // namespace contextd::cli
