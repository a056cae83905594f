// The store commands: `contextd migrate` brings the configured store's schema up to this
// binary's (SQLite: the file in the data directory; PostgreSQL: store.postgres.url, under the
// migration advisory lock, so it may run while other instances start); `contextd export` writes
// the configured store's state as JSON Lines, `contextd import` reads them into an empty store
// (store/store_transfer.h): together they move a user between SQLite and PostgreSQL.
// Not thread-safe (commands).
#pragma once

#include <istream>
#include <ostream>

#include "server/config.h"
#include "store/pg_database.h"

namespace contextd::cli {

// Migrates and prints "<backend> <where>: schema version N (was M)" on `out`. Returns the exit
// code: 0 on success, 2 with the reason on `err` (cannot connect, a schema newer than this
// binary, a failed migration: nothing of it applied).
int RunMigrateCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err);

// Writes the store's state to `out`; a line on `err` says how many rows. 0, or 2 with the reason.
int RunExportCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err);

// The PostgreSQL options of a one-shot command that reads (and writes rows) but must not change
// the schema: store.postgres.url, one connection, no migration (an older schema is refused,
// FailedPrecondition naming the versions: run `contextd migrate`). For trail, usage and memory.
store::PgOptions CommandPgOptions(const server::StoreConfig& store);

// Reads an export from `in` into the configured (empty) store, all or nothing; a line on `err`
// says how many rows. 0, or 2 with the reason (a store that already holds state, a bad line).
int RunImportCommand(const server::ServerConfig& config, std::istream& in, std::ostream& err);

}  // namespace contextd::cli
