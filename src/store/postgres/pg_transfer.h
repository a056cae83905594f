// The PostgreSQL half of an export or import (store/store_transfer.h): the state tables
// (store/schema.h) read as of one snapshot, or written in one transaction. Thread-safe as
// PgDatabase is. Internal to store/ (the PostgreSQL Backend calls them).
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "store/postgres/pg_database.h"
#include "store/schema.h"

namespace contextd::store {

// Every row of StateTables(), table by table, in creation order, in one REPEATABLE READ READ
// ONLY transaction (a consistent copy even while instances write), handed to `visit`.
absl::Status ScanPgTables(PgDatabase& db,
                          const std::function<absl::Status(const TableRow&)>& visit);

// Inserts `rows` in one transaction that locks the state tables against other writers (all or
// nothing), claims each session's oldest root, and moves each identity past the highest value
// imported. FailedPrecondition "<conninfo> already holds state; ..." when the database holds
// state.
absl::Status InsertPgRows(PgDatabase& db, const std::vector<TableRow>& rows);

}  // namespace contextd::store
