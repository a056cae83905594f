// The schema of contextd's state, declared once for both backends: each state table and its
// columns, parents before children (the order an export writes them and an import inserts them),
// with how each column travels between databases. The migrations (SQL text per backend:
// store/sqlite/migrations.cc, store/postgres/pg_migrations.cc) must create exactly these tables
// and columns plus the `local` ones each table lists; schema_test checks both. Immutable data;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace contextd::store {

// How a column travels: in JSON an integer, a string (text), a hex string (bytes), a boolean.
// kBlobText: bytes in PostgreSQL (bytea), TEXT in SQLite (the trail's payloads).
enum class ColumnKind { kInt, kText, kBytes, kBlobText, kBool };

struct ColumnSchema {
  const char* name;
  ColumnKind kind;
  bool nullable = false;
  // Added after exports existed: a row without it (an older stream) imports its zero value (0,
  // ""), as the migration that added it gave older rows.
  bool added_later = false;
};

struct TableSchema {
  const char* name;
  const char* order;     // ORDER BY of an export (the creation order)
  const char* identity;  // the column numbered by the database in creation order ("" if none)
  std::vector<ColumnSchema> columns;
  // Columns the databases add that are not state and do not travel (a row version, a lease, a
  // search vector, a mark an import recomputes), with the backend that has them.
  std::vector<std::string> local_columns = {};

  // SQLite names `identity` of `branches` rowid (it has no such column).
  std::string SqliteColumn(const ColumnSchema& c) const;
  std::string SqliteOrder() const;
};

// The state tables, in transfer order (parents before children).
const std::vector<TableSchema>& StateTables();

// The state table named `name`, or null.
const TableSchema* FindStateTable(std::string_view name);

// The other tables the migrations create, which hold no state of their own (bookkeeping, work
// lists, the search index's log, the events' outbox): never transferred. Per backend, since
// only some exist in both.
const std::vector<std::string>& SqliteLocalTables();
const std::vector<std::string>& PostgresLocalTables();

// One value of a row on its way between a database and an export: null, an integer (kInt,
// kBool as 0/1) or bytes (text, bytes).
struct Cell {
  bool null = false;
  int64_t i = 0;
  std::string s;
};

// One row of a state table.
struct TableRow {
  const TableSchema* table = nullptr;
  std::vector<Cell> cells;  // one per table->columns
};

// Counts what makes a database "not empty" for an import: branches, scopes, conversations and
// memories (one row, one column). The same SQL in both backends.
inline constexpr char kCountStateSql[] =
    "SELECT (SELECT COUNT(*) FROM branches) + (SELECT COUNT(*) FROM trail_scopes) + "
    "(SELECT COUNT(*) FROM model_threads) + (SELECT COUNT(*) FROM memories)";

// After an import: the oldest root scope of each session becomes the one OpenSessionRoot finds,
// as SQLite migration 15 and PostgreSQL migration 4 decide for older stores (decision 0028). The
// export does not carry the mark: a stream from before it imports the same way. `%s` is the
// backend's true (1, true).
inline constexpr char kClaimSessionRootsSql[] =
    "UPDATE trail_scopes SET session_root = %s WHERE pos IN (SELECT MIN(pos) FROM trail_scopes "
    "WHERE kind = 'session' GROUP BY tenant, project, session_id)";

}  // namespace contextd::store
