#include "store/store_transfer.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "store/database.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

using nlohmann::json;

// How a column travels: in JSON an integer, a string (text), a hex string (bytes), a boolean;
// `nullable` ones may be null. kBlobText: bytes in PostgreSQL, TEXT in SQLite (trail payloads).
enum class Kind { kInt, kText, kBytes, kBlobText, kBool };
struct Column {
  const char* name;
  Kind kind;
  bool nullable = false;
  // Added after exports existed: a row without it (an older stream) imports its zero value (0,
  // ""), as the migration that added it gave older rows.
  bool added_later = false;
};
struct Table {
  const char* name;
  const char* order;     // ORDER BY (empty: none)
  const char* identity;  // PostgreSQL identity column ("" if none)
  std::vector<Column> columns;
};

// Parents before children (foreign keys), each in creation order.
const std::vector<Table>& Tables() {
  static const std::vector<Table> kTables = {
      {"branches",
       "pos",
       "pos",
       {{"pos", Kind::kInt},
        {"id", Kind::kText},
        {"tenant", Kind::kText},
        {"project", Kind::kText},
        {"session_id", Kind::kText},
        {"parent_id", Kind::kText, true},
        {"depth", Kind::kInt},
        {"description", Kind::kText},
        {"prompt", Kind::kText},
        {"status", Kind::kText},
        {"budget_allocated", Kind::kInt},
        {"tokens_used", Kind::kInt},
        {"reserved_for_children", Kind::kInt},
        {"deadline_ms", Kind::kInt},
        {"created_at_ms", Kind::kInt},
        {"finished_at_ms", Kind::kInt, true},
        {"summary", Kind::kText},
        {"finish_reason", Kind::kText},
        {"memory_queued", Kind::kBool}}},
      {"branch_injections",
       "branch_id, ord",
       "",
       {{"branch_id", Kind::kText},
        {"ord", Kind::kInt},
        {"kind", Kind::kText},
        {"ref", Kind::kText},
        {"text", Kind::kText},
        {"tokens", Kind::kInt}}},
      {"branch_charges",
       "seq",
       "seq",
       {{"seq", Kind::kInt},
        {"branch_id", Kind::kText},
        {"at_ms", Kind::kInt},
        {"kind", Kind::kText},
        {"label", Kind::kText},
        {"excerpt", Kind::kText},
        {"tokens", Kind::kInt}}},
      {"trail_blobs",
       "hash",
       "",
       {{"hash", Kind::kText}, {"size", Kind::kInt}, {"content", Kind::kBlobText}}},
      {"trail_scopes",
       "pos",
       "pos",
       {{"pos", Kind::kInt},
        {"id", Kind::kText},
        {"tenant", Kind::kText},
        {"project", Kind::kText},
        {"session_id", Kind::kText},
        {"kind", Kind::kText},
        {"parent_id", Kind::kText, true},
        {"root_id", Kind::kText},
        {"description", Kind::kText},
        {"status", Kind::kText},
        {"summary", Kind::kText},
        {"summary_tokens", Kind::kInt},
        {"created_at_ms", Kind::kInt},
        {"folded_at_ms", Kind::kInt, true}}},
      {"trail_events",
       "seq",
       "seq",
       {{"seq", Kind::kInt},
        {"scope_id", Kind::kText},
        {"kind", Kind::kText},
        {"label", Kind::kText},
        {"blob_hash", Kind::kText},
        {"tokens", Kind::kInt},
        {"is_error", Kind::kBool},
        {"at_ms", Kind::kInt}}},
      {"model_threads",
       "tenant, conversation, thread",
       "",
       {{"tenant", Kind::kText},
        {"conversation", Kind::kText},
        {"thread", Kind::kText},
        {"frontier", Kind::kBytes},
        {"requests", Kind::kInt},
        {"created_ms", Kind::kInt},
        {"last_ms", Kind::kInt}}},
      {"model_rewrites",
       "seq",
       "seq",
       {{"seq", Kind::kInt},
        {"tenant", Kind::kText},
        {"conversation", Kind::kText},
        {"thread", Kind::kText},
        {"kind", Kind::kInt},
        {"key", Kind::kBytes},
        {"value", Kind::kBytes}}},
      {"model_usage",
       "seq",
       "seq",
       {{"seq", Kind::kInt},
        {"tenant", Kind::kText},
        {"conversation", Kind::kText},
        {"thread", Kind::kText},
        {"request_id", Kind::kText},
        {"at_ms", Kind::kInt},
        {"api", Kind::kText},
        {"model", Kind::kText},
        {"branch_id", Kind::kText},
        {"status", Kind::kInt},
        {"input_tokens", Kind::kInt},
        {"cache_read_input_tokens", Kind::kInt},
        {"cache_creation_input_tokens", Kind::kInt},
        {"output_tokens", Kind::kInt},
        {"tokens_before", Kind::kInt},
        {"tokens_after", Kind::kInt},
        {"duration_ms", Kind::kInt},
        {"project", Kind::kText},
        {"folds_new", Kind::kInt, false, true},
        {"folds_skipped", Kind::kText, false, true}}},
      // The retention sweep's daily totals (decision 0031); retention_blob_candidates is a
      // sweep's work list, not state, and stays behind.
      {"model_usage_daily",
       "tenant, project, day",
       "",
       {{"tenant", Kind::kText},
        {"project", Kind::kText},
        {"day", Kind::kInt},
        {"requests", Kind::kInt},
        {"input_tokens", Kind::kInt},
        {"cache_read_input_tokens", Kind::kInt},
        {"cache_creation_input_tokens", Kind::kInt},
        {"output_tokens", Kind::kInt},
        {"tokens_before", Kind::kInt},
        {"tokens_after", Kind::kInt},
        {"duration_ms", Kind::kInt},
        {"last_at_ms", Kind::kInt},
        {"folds_new", Kind::kInt, false, true},
        {"folds_skipped", Kind::kInt, false, true}}},
      {"memories",
       "pos",
       "pos",
       {{"pos", Kind::kInt},
        {"id", Kind::kText},
        {"tenant", Kind::kText},
        {"project", Kind::kText},
        {"scope", Kind::kText},
        {"status", Kind::kText},
        {"outcome", Kind::kText},
        {"title", Kind::kText},
        {"description", Kind::kText},
        {"content", Kind::kText},
        {"tags", Kind::kText},
        {"source_branch_id", Kind::kText},
        {"source_description", Kind::kText},
        {"source_prompt", Kind::kText},
        {"origin", Kind::kText},
        {"created_at_ms", Kind::kInt},
        {"updated_at_ms", Kind::kInt},
        {"use_count", Kind::kInt},
        {"helpful_count", Kind::kInt},
        {"unhelpful_count", Kind::kInt},
        {"success_count", Kind::kInt},
        {"failure_count", Kind::kInt},
        {"merged_into", Kind::kText}}},
      {"memory_history",
       "seq",
       "seq",
       {{"seq", Kind::kInt},
        {"memory_id", Kind::kText},
        {"action", Kind::kText},
        {"actor", Kind::kText},
        {"detail", Kind::kText},
        {"at_ms", Kind::kInt}}},
      {"memory_terms",
       "term",
       "",
       {{"term", Kind::kText}, {"content_df", Kind::kInt}, {"task_df", Kind::kInt}}},
      {"memory_vectors",
       "memory_id, model",
       "",
       {{"memory_id", Kind::kText},
        {"model", Kind::kText},
        {"dim", Kind::kInt},
        {"vector", Kind::kBytes}}},
      {"mcp_sessions",
       "created_ms, id",
       "",
       {{"id", Kind::kText},
        {"tenant", Kind::kText},
        {"project", Kind::kText},
        {"project_label", Kind::kText},
        {"project_header", Kind::kText},
        {"protocol_version", Kind::kText},
        {"client_capabilities", Kind::kText},
        {"client_info", Kind::kText},
        {"created_ms", Kind::kInt},
        {"last_seen_ms", Kind::kInt},
        {"ended_ms", Kind::kInt, true},
        {"end_reason", Kind::kText}}},
  };
  return kTables;
}

// SQLite's branches name their creation order rowid (no pos column).
std::string SqliteName(const Table& t, const Column& c) {
  if (std::string_view(t.name) == "branches" && std::string_view(c.name) == "pos") return "rowid";
  return c.name;
}

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

absl::StatusOr<std::string> Unhex(std::string_view hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return absl::InvalidArgumentError("odd-length hex");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return absl::InvalidArgumentError("not lowercase hex");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

absl::Status WriteLine(std::ostream& out, const json& j) {
  try {
    out << base::DumpJson(j) << "\n";
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("export: ", e.what()));
  }
  return absl::OkStatus();
}

// The one place a row's values are turned into a JSON object, whichever database they came from.
struct Cell {
  bool null = false;
  int64_t i = 0;
  std::string s;
};

json RowJson(const Table& t, const std::vector<Cell>& cells) {
  json row = json::object();
  for (size_t k = 0; k < t.columns.size(); ++k) {
    const Column& c = t.columns[k];
    const Cell& v = cells[k];
    if (v.null) {
      row[c.name] = nullptr;
    } else if (c.kind == Kind::kInt) {
      row[c.name] = v.i;
    } else if (c.kind == Kind::kBool) {
      row[c.name] = v.i != 0;
    } else if (c.kind == Kind::kBytes || c.kind == Kind::kBlobText) {
      row[c.name] = Hex(v.s);
    } else {
      row[c.name] = v.s;
    }
  }
  return row;
}

absl::StatusOr<int64_t> ExportSqlite(const std::string& path, std::ostream& out) {
  DatabaseOptions o;
  o.background_checkpoint_ms = 0;
  o.create_directories = false;
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, o));
  std::lock_guard<std::mutex> lock(db->mutex());
  ASSIGN_OR_RETURN(int version, db->SchemaVersion());
  RETURN_IF_ERROR(WriteLine(
      out, json{{"contextd_export", 1}, {"from", "sqlite"}, {"schema_version", version}}));
  int64_t rows = 0;
  for (const Table& t : Tables()) {
    std::vector<std::string> names;
    for (const Column& c : t.columns) names.push_back(SqliteName(t, c));
    std::string order = std::string_view(t.name) == "branches" ? "rowid" : t.order;
    ASSIGN_OR_RETURN(Statement st,
                     db->Prepare(absl::StrCat("SELECT ", absl::StrJoin(names, ", "), " FROM ",
                                              t.name, " ORDER BY ", order)));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::vector<Cell> cells(t.columns.size());
      for (size_t k = 0; k < t.columns.size(); ++k) {
        int col = static_cast<int>(k);
        cells[k].null = st.IsNull(col);
        if (t.columns[k].kind == Kind::kInt || t.columns[k].kind == Kind::kBool) {
          cells[k].i = st.Int(col);
        } else {
          cells[k].s = st.Blob(col);
        }
      }
      RETURN_IF_ERROR(WriteLine(out, json{{"table", t.name}, {"row", RowJson(t, cells)}}));
      ++rows;
    }
  }
  return rows;
}

absl::StatusOr<int64_t> ExportPostgres(const PgOptions& options, std::ostream& out) {
  PgOptions o = options;
  o.pool_size = 1;
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(o));
  ASSIGN_OR_RETURN(int version, db->SchemaVersion());
  RETURN_IF_ERROR(WriteLine(
      out, json{{"contextd_export", 1}, {"from", "postgres"}, {"schema_version", version}}));
  int64_t rows = 0;
  // One snapshot for every table: a consistent copy even while instances write.
  absl::Status st = db->Write([&](PgConn& c) -> absl::Status {
    RETURN_IF_ERROR(c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    for (const Table& t : Tables()) {
      std::vector<std::string> names;
      for (const Column& col : t.columns) names.push_back(col.name);
      ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", absl::StrJoin(names, ", "),
                                                       " FROM ", t.name, " ORDER BY ", t.order)));
      for (int i = 0; i < r.rows(); ++i) {
        std::vector<Cell> cells(t.columns.size());
        for (size_t k = 0; k < t.columns.size(); ++k) {
          int col = static_cast<int>(k);
          cells[k].null = r.IsNull(i, col);
          if (cells[k].null) continue;
          switch (t.columns[k].kind) {
            case Kind::kInt:
              cells[k].i = r.Int(i, col);
              break;
            case Kind::kBool:
              cells[k].i = r.Bool(i, col) ? 1 : 0;
              break;
            case Kind::kBytes:
            case Kind::kBlobText:
              cells[k].s = r.Bytes(i, col);
              break;
            case Kind::kText:
              cells[k].s = r.Text(i, col);
              break;
          }
        }
        RETURN_IF_ERROR(WriteLine(out, json{{"table", t.name}, {"row", RowJson(t, cells)}}));
        ++rows;
      }
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return rows;
}

// One parsed line of the stream.
struct Line {
  const Table* table = nullptr;
  std::vector<Cell> cells;
};

absl::StatusOr<std::vector<Line>> ReadStream(std::istream& in) {
  std::map<std::string, const Table*> by_name;
  for (const Table& t : Tables()) by_name[t.name] = &t;
  std::vector<Line> lines;
  std::string text;
  int64_t n = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++n;
    if (text.empty()) continue;
    auto bad = [n](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("import line ", n, ": ", why));
    };
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    if (!header) {
      if (!j.contains("contextd_export") || j["contextd_export"] != 1) {
        return bad("not a contextd export (the first line must be its header)");
      }
      header = true;
      continue;
    }
    if (!j.contains("table") || !j["table"].is_string() || !j.contains("row") ||
        !j["row"].is_object()) {
      return bad("expected {\"table\":...,\"row\":{...}}");
    }
    auto it = by_name.find(j["table"].get<std::string>());
    if (it == by_name.end()) return bad(absl::StrCat("unknown table ", base::DumpJson(j["table"])));
    Line line;
    line.table = it->second;
    const json& row = j["row"];
    for (const auto& [key, _] : row.items()) {
      bool known = false;
      for (const Column& c : line.table->columns) known = known || key == c.name;
      if (!known) return bad(absl::StrCat("unknown column ", line.table->name, ".", key));
    }
    for (const Column& c : line.table->columns) {
      Cell cell;
      if (!row.contains(c.name) && c.added_later) {
        // The zero value of its kind (an int 0, text ""), which the cell already holds.
      } else if (!row.contains(c.name) || row[c.name].is_null()) {
        if (!c.nullable) return bad(absl::StrCat("missing ", line.table->name, ".", c.name));
        cell.null = true;
      } else if (c.kind == Kind::kInt) {
        if (!row[c.name].is_number_integer()) return bad(absl::StrCat(c.name, ": not an integer"));
        cell.i = row[c.name].get<int64_t>();
      } else if (c.kind == Kind::kBool) {
        if (!row[c.name].is_boolean()) return bad(absl::StrCat(c.name, ": not a boolean"));
        cell.i = row[c.name].get<bool>() ? 1 : 0;
      } else {
        if (!row[c.name].is_string()) return bad(absl::StrCat(c.name, ": not a string"));
        cell.s = row[c.name].get<std::string>();
        if (c.kind == Kind::kBytes || c.kind == Kind::kBlobText) {
          auto bytes = Unhex(cell.s);
          if (!bytes.ok()) return bad(absl::StrCat(c.name, ": ", bytes.status().message()));
          cell.s = *std::move(bytes);
        }
      }
      // Read back as JSON by the stores' summaries and rollups: refused here, not there.
      if (std::string_view(line.table->name) == "model_usage" &&
          std::string_view(c.name) == "folds_skipped") {
        auto decoded = DecodeFoldsSkipped(cell.s);
        if (!decoded.ok()) return bad(std::string(decoded.status().message()));
      }
      line.cells.push_back(std::move(cell));
    }
    lines.push_back(std::move(line));
  }
  if (!header) return absl::InvalidArgumentError("empty stream (no export header)");
  return lines;
}

// After an import: the oldest root scope of each session becomes the one OpenSessionRoot finds,
// as SQLite migration 15 and PostgreSQL migration 4 decide for older stores (decision 0028). The
// export does not carry the mark: a stream from before it imports the same way.
constexpr char kClaimSessionRoots[] =
    "UPDATE trail_scopes SET session_root = %s WHERE pos IN (SELECT MIN(pos) FROM trail_scopes "
    "WHERE kind = 'session' GROUP BY tenant, project, session_id)";

constexpr char kNotEmpty[] =
    "SELECT (SELECT COUNT(*) FROM branches) + (SELECT COUNT(*) FROM trail_scopes) + "
    "(SELECT COUNT(*) FROM model_threads) + (SELECT COUNT(*) FROM memories)";

absl::StatusOr<int64_t> ImportSqlite(const std::string& path, const std::vector<Line>& lines) {
  DatabaseOptions o;
  o.background_checkpoint_ms = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, o));
  std::lock_guard<std::mutex> lock(db->mutex());
  {
    ASSIGN_OR_RETURN(Statement count, db->Prepare(kNotEmpty));
    ASSIGN_OR_RETURN(bool row, count.Step());
    if (row && count.Int(0) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " already holds state; import into a new store"));
    }
  }
  std::map<const Table*, Statement> inserts;
  RETURN_IF_ERROR(db->BeginWrite());
  auto body = [&]() -> absl::Status {
    for (const Line& line : lines) {
      const Table& t = *line.table;
      auto it = inserts.find(&t);
      if (it == inserts.end()) {
        std::vector<std::string> names, marks;
        for (const Column& c : t.columns) {
          names.push_back(SqliteName(t, c));
          marks.push_back("?");
        }
        ASSIGN_OR_RETURN(Statement st, db->Prepare(absl::StrCat(
                                           "INSERT INTO ", t.name, " (", absl::StrJoin(names, ", "),
                                           ") VALUES (", absl::StrJoin(marks, ", "), ")")));
        it = inserts.emplace(&t, std::move(st)).first;
      }
      Statement& st = it->second;
      ResetOnExit reset(st);
      for (size_t k = 0; k < t.columns.size(); ++k) {
        int index = static_cast<int>(k) + 1;
        const Cell& v = line.cells[k];
        if (v.null) {
          st.BindNull(index);
        } else if (t.columns[k].kind == Kind::kInt || t.columns[k].kind == Kind::kBool) {
          st.Bind(index, v.i);
        } else if (t.columns[k].kind == Kind::kBytes) {
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
    }
    return db->Exec(absl::StrReplaceAll(kClaimSessionRoots, {{"%s", "1"}}));
  };
  RETURN_IF_ERROR(db->EndWrite(body()));
  return static_cast<int64_t>(lines.size());
}

absl::StatusOr<int64_t> ImportPostgres(const PgOptions& options, const std::vector<Line>& lines) {
  PgOptions o = options;
  o.pool_size = 1;
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(o));
  absl::Status st = db->Write([&](PgConn& c) -> absl::Status {
    // Nobody else writes while we check and copy.
    RETURN_IF_ERROR(c.ExecScript(
        "LOCK TABLE branches, trail_scopes, model_threads, memories IN EXCLUSIVE MODE"));
    ASSIGN_OR_RETURN(PgResult count, c.Exec(kNotEmpty));
    if (count.Int(0, 0) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(db->redacted_conninfo(), " already holds state; import into a new store"));
    }
    for (const Line& line : lines) {
      const Table& t = *line.table;
      std::vector<std::string> names, marks;
      std::vector<PgParam> params;
      for (size_t k = 0; k < t.columns.size(); ++k) {
        names.push_back(t.columns[k].name);
        marks.push_back(absl::StrCat("$", k + 1));
        const Cell& v = line.cells[k];
        if (v.null) {
          params.push_back(PgParam::Null());
        } else if (t.columns[k].kind == Kind::kInt) {
          params.emplace_back(v.i);
        } else if (t.columns[k].kind == Kind::kBool) {
          params.emplace_back(v.i != 0);
        } else if (t.columns[k].kind == Kind::kText) {
          params.emplace_back(v.s);
        } else {
          params.push_back(PgParam::Bytes(v.s));
        }
      }
      auto r = c.Exec(absl::StrCat("INSERT INTO ", t.name, " (", absl::StrJoin(names, ", "), ") ",
                                   *t.identity != '\0' ? "OVERRIDING SYSTEM VALUE " : "",
                                   "VALUES (", absl::StrJoin(marks, ", "), ")"),
                      params);
      if (!r.ok()) {
        return absl::Status(r.status().code(),
                            absl::StrCat("import into ", t.name, ": ", r.status().message()));
      }
    }
    RETURN_IF_ERROR(c.ExecScript(absl::StrReplaceAll(kClaimSessionRoots, {{"%s", "true"}})));
    // Identity columns go on from the highest imported value.
    for (const Table& t : Tables()) {
      if (*t.identity == '\0') continue;
      RETURN_IF_ERROR(c.Exec(absl::StrCat("SELECT setval(pg_get_serial_sequence('", t.name, "', '",
                                          t.identity, "'), COALESCE((SELECT MAX(", t.identity,
                                          ") FROM ", t.name, "), 0) + 1, false)"))
                          .status());
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return static_cast<int64_t>(lines.size());
}

}  // namespace

absl::StatusOr<int64_t> ExportTables(const StoreLocation& from, std::ostream& out) {
  return from.postgres ? ExportPostgres(from.pg, out) : ExportSqlite(from.sqlite_path, out);
}

absl::StatusOr<int64_t> ImportTables(const StoreLocation& to, std::istream& in) {
  ASSIGN_OR_RETURN(std::vector<Line> lines, ReadStream(in));
  return to.postgres ? ImportPostgres(to.pg, lines) : ImportSqlite(to.sqlite_path, lines);
}

}  // namespace contextd::store
