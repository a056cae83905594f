// The numbered schema migrations of contextd's SQLite database, embedded in the binary. They are
// applied in order at open (Database::Open) inside one transaction and recorded in the
// schema_version table. Never edit a released migration: add the next number. Immutable data.
#pragma once

#include <vector>

#include "store/internal/migration.h"

namespace contextd::store {

// All migrations in version order.
const std::vector<Migration>& Migrations();

}  // namespace contextd::store
