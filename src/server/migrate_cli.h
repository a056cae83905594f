// `contextd migrate`: brings the configured store's schema up to this binary's (SQLite: the file
// in the data directory; PostgreSQL: store.postgres.url, under the migration advisory lock, so it
// may run while other instances start) and reports the version. Not thread-safe (a command).
#pragma once

#include <ostream>

#include "server/config.h"

namespace contextd::server {

// Migrates and prints "<backend> <where>: schema version N (was M)" on `out`. Returns the exit
// code: 0 on success, 2 with the reason on `err` (cannot connect, a schema newer than this
// binary, a failed migration: nothing of it applied).
int RunMigrateCommand(const ServerConfig& config, std::ostream& out, std::ostream& err);

}  // namespace contextd::server
