// The schema declared in store/schema.h against the tables and columns PostgreSQL's migrations
// create, with each column's type (schema_test.cc checks SQLite's).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "store/postgres/pg_database.h"
#include "store/schema.h"
#include "store/testing/pg_backend.h"
#include "store/testing/schema_check.h"

namespace contextd::store {
namespace {

// The PostgreSQL types a column of each kind may have.
bool TypeFits(ColumnKind kind, const std::string& type) {
  switch (kind) {
    case ColumnKind::kInt:
      return type == "bigint" || type == "integer" || type == "smallint";
    case ColumnKind::kText:
      return type == "text";
    case ColumnKind::kBytes:
    case ColumnKind::kBlobText:
      return type == "bytea";
    case ColumnKind::kBool:
      return type == "boolean";
  }
  return false;
}

TEST(SchemaPgTest, PostgresMigrationsCreateTheDeclaredSchema) {
  CONTEXTD_REQUIRE_PG_OR_SKIP();
  testing::PgBackend backend;
  ASSERT_TRUE(backend.SkipReason().empty()) << backend.SkipReason();
  auto db = PgDatabase::Open(backend.options(1));
  ASSERT_TRUE(db.ok()) << db.status();
  testing::DatabaseTables tables;
  std::map<std::string, std::string> types;  // "table.column" -> data_type
  absl::Status read = (*db)->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult names,
                     c.Exec("SELECT table_name FROM information_schema.tables WHERE "
                            "table_schema = current_schema() AND table_type = 'BASE TABLE'"));
    for (int i = 0; i < names.rows(); ++i) tables[names.Text(i, 0)];
    ASSIGN_OR_RETURN(PgResult cols,
                     c.Exec("SELECT table_name, column_name, data_type FROM "
                            "information_schema.columns WHERE table_schema = current_schema()"));
    for (int i = 0; i < cols.rows(); ++i) {
      auto it = tables.find(cols.Text(i, 0));
      if (it == tables.end()) continue;  // a view
      it->second.insert(cols.Text(i, 1));
      types[cols.Text(i, 0) + "." + cols.Text(i, 1)] = cols.Text(i, 2);
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  auto problems = testing::SchemaDifferences(
      tables, PostgresLocalTables(),
      [](const TableSchema&, const ColumnSchema& c) { return std::string(c.name); });
  for (const TableSchema& t : StateTables()) {
    for (const ColumnSchema& c : t.columns) {
      auto it = types.find(std::string(t.name) + "." + c.name);
      if (it != types.end() && !TypeFits(c.kind, it->second)) {
        problems.push_back(std::string("column ") + t.name + "." + c.name + " is " + it->second);
      }
    }
  }
  EXPECT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
}

}  // namespace
}  // namespace contextd::store
