// Test-only: compares the tables and columns a migrated database holds with store/schema.h
// (schema_test.cc for SQLite, schema_pg_test.cc for PostgreSQL). Not thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "store/schema.h"

namespace contextd::store::testing {

// Table -> its columns, as a database reports them.
using DatabaseTables = std::map<std::string, std::set<std::string>>;

// Every difference between `db` and the declared schema, one line each (empty: they agree):
// a state table or column the database lacks, a table that is neither a state table nor in
// `local_tables`, a column of a state table that is neither declared nor local. `column_name`
// maps a declared column to the database's name for it ("" for one it holds implicitly, as
// SQLite's rowid).
template <typename ColumnName>
std::vector<std::string> SchemaDifferences(const DatabaseTables& db,
                                           const std::vector<std::string>& local_tables,
                                           ColumnName column_name) {
  std::vector<std::string> problems;
  std::set<std::string> known(local_tables.begin(), local_tables.end());
  for (const std::string& t : local_tables) {
    if (db.count(t) == 0) problems.push_back("local table " + t + " is missing");
  }
  for (const TableSchema& t : StateTables()) {
    known.insert(t.name);
    auto it = db.find(t.name);
    if (it == db.end()) {
      problems.push_back(std::string("state table ") + t.name + " is missing");
      continue;
    }
    std::set<std::string> declared(t.local_columns.begin(), t.local_columns.end());
    for (const ColumnSchema& c : t.columns) {
      std::string name = column_name(t, c);
      if (name.empty()) continue;
      declared.insert(name);
      if (it->second.count(name) == 0) {
        problems.push_back(std::string("column ") + t.name + "." + name + " is missing");
      }
    }
    for (const std::string& c : it->second) {
      if (declared.count(c) == 0) {
        problems.push_back(std::string("column ") + t.name + "." + c + " is not declared");
      }
    }
  }
  for (const auto& [name, _] : db) {
    if (known.count(name) == 0) problems.push_back("table " + name + " is not declared");
  }
  return problems;
}

}  // namespace contextd::store::testing
