// Moving contextd's state between stores: ExportTables writes every row of the state tables
// (store/schema.h: branches, charges, the trail, the model gateway's conversations, the
// ReasoningBank, MCP sessions) of either backend as JSON Lines; ImportTables writes such a stream
// into an empty, migrated store of either kind, keeping ids, sequence numbers and order, so that
// a user moves from SQLite to PostgreSQL (or back) without losing a trail. Search indexes are
// rebuilt by the target. Not thread-safe (a command); nothing else may write the target meanwhile.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>

#include "absl/status/statusor.h"
#include "store/backend.h"
#include "store/backend_options.h"

namespace contextd::store {

// Writes a header line ({"contextd_export":1,"from":<backend name>,"schema_version":N}) and one
// line per row ({"table":"...","row":{...}}; bytes as hex), as of one snapshot; returns the rows
// written. Unavailable/Internal on database errors; InvalidArgument if a text column holds
// invalid UTF-8.
absl::StatusOr<int64_t> ExportTables(Backend& from, std::ostream& out);
// The same from the backend `from` opens (for a command: BackendOptions::one_shot).
absl::StatusOr<int64_t> ExportTables(const BackendOptions& from, std::ostream& out);

// Reads what ExportTables wrote into `to`, in one transaction: all of it or nothing.
// FailedPrecondition if `to` already holds branches, scopes, conversations or memories;
// InvalidArgument (naming the line) for a malformed stream or an unknown table or column.
// Returns the rows written.
absl::StatusOr<int64_t> ImportTables(Backend& to, std::istream& in);
// The same into the backend `to` opens (migrated at open), after the whole stream was read.
absl::StatusOr<int64_t> ImportTables(const BackendOptions& to, std::istream& in);

}  // namespace contextd::store
