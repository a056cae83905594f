// The schema declared in store/schema.h against the tables and columns SQLite's migrations
// create (schema_pg_test.cc checks PostgreSQL's).
#include "store/schema.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "store/sqlite/database.h"
#include "store/test_util.h"
#include "store/testing/schema_check.h"

namespace contextd::store {
namespace {

testing::DatabaseTables SqliteTables(Database& db) {
  testing::DatabaseTables tables;
  std::lock_guard<std::mutex> lock(db.mutex());
  // Tables and virtual tables; an FTS5 table's shadow tables are its own business.
  auto names = db.Prepare(
      "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual') "
      "AND name NOT LIKE 'sqlite_%'");
  EXPECT_TRUE(names.ok()) << names.status();
  if (!names.ok()) return tables;
  while (*names->Step()) tables[names->Text(0)];
  for (auto& [name, columns] : tables) {
    auto info = db.Prepare("SELECT name FROM pragma_table_info(?)");
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) continue;
    info->Bind(1, std::string_view(name));
    while (*info->Step()) columns.insert(info->Text(0));
  }
  return tables;
}

TEST(SchemaTest, SqliteMigrationsCreateTheDeclaredSchema) {
  TempDir tmp;
  auto db = Database::Open(tmp.File("contextd.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  auto problems = testing::SchemaDifferences(SqliteTables(**db), SqliteLocalTables(),
                                             [](const TableSchema& t, const ColumnSchema& c) {
                                               std::string name = t.SqliteColumn(c);
                                               return name == "rowid" ? std::string() : name;
                                             });
  EXPECT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
}

TEST(SchemaTest, TablesComeAfterTheTablesTheirForeignKeysName) {
  // Transfer order: an import inserts parents before children.
  TempDir tmp;
  auto db = Database::Open(tmp.File("contextd.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  std::lock_guard<std::mutex> lock((*db)->mutex());
  std::set<std::string> seen;
  for (const TableSchema& t : StateTables()) {
    EXPECT_EQ(FindStateTable(t.name), &t);
    auto fks = (*db)->Prepare("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?)");
    ASSERT_TRUE(fks.ok()) << fks.status();
    fks->Bind(1, std::string_view(t.name));
    while (*fks->Step()) {
      const std::string parent = fks->Text(0);
      if (parent == t.name) continue;  // a tree in one table (branches.parent_id)
      EXPECT_TRUE(seen.count(parent) == 1) << t.name << " names " << parent << ", declared later";
    }
    seen.insert(t.name);
  }
  EXPECT_EQ(FindStateTable("schema_version"), nullptr);
}

}  // namespace
}  // namespace contextd::store
