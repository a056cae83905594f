// Moving contextd's state between stores: ExportTables writes every row of the state tables
// (branches, charges, the trail, the model gateway's conversations, the ReasoningBank) of an
// SQLite file or a PostgreSQL database as JSON Lines; ImportTables writes such a stream into an
// empty, migrated store of either kind, keeping ids, sequence numbers and order, so that a user
// moves from SQLite to PostgreSQL (or back) without losing a trail. Search indexes are rebuilt by
// the target. Not thread-safe (a command); nothing else may write the target meanwhile.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/pg_database.h"

namespace contextd::store {

// A source or target: the SQLite file at `sqlite_path`, or (when `postgres` is set) PostgreSQL.
struct StoreLocation {
  std::string sqlite_path;
  bool postgres = false;
  PgOptions pg;
};

// Writes a header line ({"contextd_export":1,...}) and one line per row
// ({"table":"...","row":{...}}; bytes as hex); returns the rows written. Unavailable/Internal on
// database errors; InvalidArgument if a text column holds invalid UTF-8.
absl::StatusOr<int64_t> ExportTables(const StoreLocation& from, std::ostream& out);

// Reads what ExportTables wrote into `to` (migrated first if needed), in one transaction: all
// of it or nothing. FailedPrecondition if `to` already holds branches, scopes, conversations or
// memories; InvalidArgument (naming the line) for a malformed stream or an unknown table or
// column. Returns the rows written.
absl::StatusOr<int64_t> ImportTables(const StoreLocation& to, std::istream& in);

}  // namespace contextd::store
