#include "store/sqlite/sqlite_transfer.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

absl::StatusOr<Statement> PrepareInsert(Database& db, const TableSchema& t) {
  std::vector<std::string> names, marks;
  for (const ColumnSchema& c : t.columns) {
    names.push_back(t.SqliteColumn(c));
    marks.push_back("?");
  }
  return db.Prepare(absl::StrCat("INSERT INTO ", t.name, " (", absl::StrJoin(names, ", "),
                                 ") VALUES (", absl::StrJoin(marks, ", "), ")"));
}

absl::Status InsertRow(Statement& st, const TableRow& row) {
  const TableSchema& t = *row.table;
  ResetOnExit reset(st);
  for (size_t k = 0; k < t.columns.size(); ++k) {
    int index = static_cast<int>(k) + 1;
    const Cell& v = row.cells[k];
    const ColumnKind kind = t.columns[k].kind;
    if (v.null) {
      st.BindNull(index);
    } else if (kind == ColumnKind::kInt || kind == ColumnKind::kBool) {
      st.Bind(index, v.i);
    } else if (kind == ColumnKind::kBytes) {
      st.BindBlob(index, v.s);
    } else {
      st.Bind(index, std::string_view(v.s));
    }
  }
  absl::Status inserted = st.Run();
  if (!inserted.ok()) {
    return absl::Status(inserted.code(),
                        absl::StrCat("import into ", t.name, ": ", inserted.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ScanSqliteTables(Database& db,
                              const std::function<absl::Status(const TableRow&)>& visit) {
  std::lock_guard<std::mutex> lock(db.mutex());
  for (const TableSchema& t : StateTables()) {
    std::vector<std::string> names;
    for (const ColumnSchema& c : t.columns) names.push_back(t.SqliteColumn(c));
    ASSIGN_OR_RETURN(Statement st,
                     db.Prepare(absl::StrCat("SELECT ", absl::StrJoin(names, ", "), " FROM ",
                                             t.name, " ORDER BY ", t.SqliteOrder())));
    TableRow row;
    row.table = &t;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, st.Step());
      if (!more) break;
      row.cells.assign(t.columns.size(), Cell{});
      for (size_t k = 0; k < t.columns.size(); ++k) {
        int col = static_cast<int>(k);
        row.cells[k].null = st.IsNull(col);
        const ColumnKind kind = t.columns[k].kind;
        if (kind == ColumnKind::kInt || kind == ColumnKind::kBool) {
          row.cells[k].i = st.Int(col);
        } else {
          row.cells[k].s = st.Blob(col);
        }
      }
      RETURN_IF_ERROR(visit(row));
    }
  }
  return absl::OkStatus();
}

absl::Status InsertSqliteRows(Database& db, const std::string& where,
                              const std::vector<TableRow>& rows) {
  std::lock_guard<std::mutex> lock(db.mutex());
  {
    ASSIGN_OR_RETURN(Statement count, db.Prepare(kCountStateSql));
    ASSIGN_OR_RETURN(bool row, count.Step());
    if (row && count.Int(0) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " already holds state; import into a new store"));
    }
  }
  std::map<const TableSchema*, Statement> inserts;
  RETURN_IF_ERROR(db.BeginWrite());
  auto body = [&]() -> absl::Status {
    for (const TableRow& row : rows) {
      auto it = inserts.find(row.table);
      if (it == inserts.end()) {
        ASSIGN_OR_RETURN(Statement st, PrepareInsert(db, *row.table));
        it = inserts.emplace(row.table, std::move(st)).first;
      }
      RETURN_IF_ERROR(InsertRow(it->second, row));
    }
    return db.Exec(absl::StrReplaceAll(kClaimSessionRootsSql, {{"%s", "1"}}));
  };
  return db.EndWrite(body());
}

}  // namespace contextd::store
