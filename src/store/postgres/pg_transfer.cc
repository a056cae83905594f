#include "store/postgres/pg_transfer.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

namespace contextd::store {
namespace {

Cell PgCell(const PgResult& r, int row, int col, ColumnKind kind) {
  Cell cell;
  cell.null = r.IsNull(row, col);
  if (cell.null) return cell;
  switch (kind) {
    case ColumnKind::kInt:
      cell.i = r.Int(row, col);
      break;
    case ColumnKind::kBool:
      cell.i = r.Bool(row, col) ? 1 : 0;
      break;
    case ColumnKind::kBytes:
    case ColumnKind::kBlobText:
      cell.s = r.Bytes(row, col);
      break;
    case ColumnKind::kText:
      cell.s = r.Text(row, col);
      break;
  }
  return cell;
}

absl::Status InsertPgRow(PgConn& c, const TableRow& row) {
  const TableSchema& t = *row.table;
  std::vector<std::string> names, marks;
  std::vector<PgParam> params;
  for (size_t k = 0; k < t.columns.size(); ++k) {
    names.push_back(t.columns[k].name);
    marks.push_back(absl::StrCat("$", k + 1));
    const Cell& v = row.cells[k];
    const ColumnKind kind = t.columns[k].kind;
    if (v.null) {
      params.push_back(PgParam::Null());
    } else if (kind == ColumnKind::kInt) {
      params.emplace_back(v.i);
    } else if (kind == ColumnKind::kBool) {
      params.emplace_back(v.i != 0);
    } else if (kind == ColumnKind::kText) {
      params.emplace_back(v.s);
    } else {
      params.push_back(PgParam::Bytes(v.s));
    }
  }
  auto r = c.Exec(absl::StrCat("INSERT INTO ", t.name, " (", absl::StrJoin(names, ", "), ") ",
                               *t.identity != '\0' ? "OVERRIDING SYSTEM VALUE " : "", "VALUES (",
                               absl::StrJoin(marks, ", "), ")"),
                  params);
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat("import into ", t.name, ": ", r.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ScanPgTables(PgDatabase& db,
                          const std::function<absl::Status(const TableRow&)>& visit) {
  return db.Write([&](PgConn& c) -> absl::Status {
    RETURN_IF_ERROR(c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    for (const TableSchema& t : StateTables()) {
      std::vector<std::string> names;
      for (const ColumnSchema& col : t.columns) names.push_back(col.name);
      ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", absl::StrJoin(names, ", "),
                                                       " FROM ", t.name, " ORDER BY ", t.order)));
      TableRow row;
      row.table = &t;
      for (int i = 0; i < r.rows(); ++i) {
        row.cells.clear();
        for (size_t k = 0; k < t.columns.size(); ++k) {
          row.cells.push_back(PgCell(r, i, static_cast<int>(k), t.columns[k].kind));
        }
        RETURN_IF_ERROR(visit(row));
      }
    }
    return absl::OkStatus();
  });
}

absl::Status InsertPgRows(PgDatabase& db, const std::vector<TableRow>& rows) {
  return db.Write([&](PgConn& c) -> absl::Status {
    // Nobody else writes while we check and copy.
    RETURN_IF_ERROR(c.ExecScript(
        "LOCK TABLE branches, trail_scopes, model_threads, memories IN EXCLUSIVE MODE"));
    ASSIGN_OR_RETURN(PgResult count, c.Exec(kCountStateSql));
    if (count.Int(0, 0) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(db.redacted_conninfo(), " already holds state; import into a new store"));
    }
    for (const TableRow& row : rows) RETURN_IF_ERROR(InsertPgRow(c, row));
    RETURN_IF_ERROR(c.ExecScript(absl::StrReplaceAll(kClaimSessionRootsSql, {{"%s", "true"}})));
    // Identity columns go on from the highest imported value.
    for (const TableSchema& t : StateTables()) {
      if (*t.identity == '\0') continue;
      RETURN_IF_ERROR(c.Exec(absl::StrCat("SELECT setval(pg_get_serial_sequence('", t.name, "', '",
                                          t.identity, "'), COALESCE((SELECT MAX(", t.identity,
                                          ") FROM ", t.name, "), 0) + 1, false)"))
                          .status());
    }
    return absl::OkStatus();
  });
}

}  // namespace contextd::store
