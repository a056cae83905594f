// The SQLite half of an export or import (store/store_transfer.h): the state tables
// (store/schema.h) read from, or written into, one connection. Callers hold no lock; each call
// holds the database's mutex throughout. Internal to store/ (the SQLite Backend calls them).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "store/schema.h"
#include "store/sqlite/database.h"

namespace contextd::store {

// Every row of StateTables(), table by table, in creation order, handed to `visit`.
absl::Status ScanSqliteTables(Database& db,
                              const std::function<absl::Status(const TableRow&)>& visit);

// Inserts `rows` in one transaction (all or nothing) and claims each session's oldest root.
// FailedPrecondition "<where> already holds state; ..." when the database holds state.
absl::Status InsertSqliteRows(Database& db, const std::string& where,
                              const std::vector<TableRow>& rows);

}  // namespace contextd::store
