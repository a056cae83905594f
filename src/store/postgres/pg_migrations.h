// The numbered schema migrations of contextd's PostgreSQL database, embedded in the binary:
// applied in order by PgDatabase::Open, each in the transaction that holds the migration
// advisory lock, and recorded in schema_version. Version 1 is the whole current schema (the
// SQLite history is not replayed). Never edit a released migration: add the next number.
// Immutable data.
#pragma once

#include <cstdint>
#include <vector>

#include "store/internal/migration.h"

namespace contextd::store {

// All PostgreSQL migrations in version order.
const std::vector<Migration>& PgMigrations();

// The advisory lock key held while migrating ("contextd" in ASCII, as a bigint).
inline constexpr int64_t kPgMigrationLock = 0x636f6e7465787464;

}  // namespace contextd::store
