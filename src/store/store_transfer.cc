#include "store/store_transfer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "store/schema.h"
#include "store/usage_folds.h"

namespace contextd::store {
namespace {

using nlohmann::json;

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
json RowJson(const TableSchema& t, const std::vector<Cell>& cells) {
  json row = json::object();
  for (size_t k = 0; k < t.columns.size(); ++k) {
    const ColumnSchema& c = t.columns[k];
    const Cell& v = cells[k];
    if (v.null) {
      row[c.name] = nullptr;
    } else if (c.kind == ColumnKind::kInt) {
      row[c.name] = v.i;
    } else if (c.kind == ColumnKind::kBool) {
      row[c.name] = v.i != 0;
    } else if (c.kind == ColumnKind::kBytes || c.kind == ColumnKind::kBlobText) {
      row[c.name] = Hex(v.s);
    } else {
      row[c.name] = v.s;
    }
  }
  return row;
}

absl::StatusOr<std::vector<TableRow>> ReadStream(std::istream& in) {
  std::vector<TableRow> lines;
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
    const TableSchema* table = FindStateTable(j["table"].get<std::string>());
    if (table == nullptr) return bad(absl::StrCat("unknown table ", base::DumpJson(j["table"])));
    TableRow line;
    line.table = table;
    const json& row = j["row"];
    for (const auto& [key, _] : row.items()) {
      bool known = false;
      for (const ColumnSchema& c : line.table->columns) known = known || key == c.name;
      if (!known) return bad(absl::StrCat("unknown column ", line.table->name, ".", key));
    }
    for (const ColumnSchema& c : line.table->columns) {
      Cell cell;
      if (!row.contains(c.name) && c.added_later) {
        // The zero value of its kind (an int 0, text ""), which the cell already holds.
      } else if (!row.contains(c.name) || row[c.name].is_null()) {
        if (!c.nullable) return bad(absl::StrCat("missing ", line.table->name, ".", c.name));
        cell.null = true;
      } else if (c.kind == ColumnKind::kInt) {
        if (!row[c.name].is_number_integer()) return bad(absl::StrCat(c.name, ": not an integer"));
        cell.i = row[c.name].get<int64_t>();
      } else if (c.kind == ColumnKind::kBool) {
        if (!row[c.name].is_boolean()) return bad(absl::StrCat(c.name, ": not a boolean"));
        cell.i = row[c.name].get<bool>() ? 1 : 0;
      } else {
        if (!row[c.name].is_string()) return bad(absl::StrCat(c.name, ": not a string"));
        cell.s = row[c.name].get<std::string>();
        if (c.kind == ColumnKind::kBytes || c.kind == ColumnKind::kBlobText) {
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

}  // namespace

absl::StatusOr<int64_t> ExportTables(Backend& from, std::ostream& out) {
  ASSIGN_OR_RETURN(int version, from.SchemaVersion());
  RETURN_IF_ERROR(WriteLine(out, json{{"contextd_export", 1},
                                      {"from", std::string(from.name())},
                                      {"schema_version", version}}));
  int64_t rows = 0;
  auto write = [&](const TableRow& row) -> absl::Status {
    RETURN_IF_ERROR(
        WriteLine(out, json{{"table", row.table->name}, {"row", RowJson(*row.table, row.cells)}}));
    ++rows;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(from.ScanStateTables(write));
  return rows;
}

absl::StatusOr<int64_t> ImportTables(Backend& to, std::istream& in) {
  ASSIGN_OR_RETURN(std::vector<TableRow> rows, ReadStream(in));
  RETURN_IF_ERROR(to.InsertStateRows(rows));
  return static_cast<int64_t>(rows.size());
}

absl::StatusOr<int64_t> ExportTables(const BackendOptions& from, std::ostream& out) {
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, OpenBackend(from));
  return ExportTables(*backend, out);
}

absl::StatusOr<int64_t> ImportTables(const BackendOptions& to, std::istream& in) {
  // The stream is read before the target is opened: a bad stream touches no database.
  ASSIGN_OR_RETURN(std::vector<TableRow> rows, ReadStream(in));
  ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, OpenBackend(to));
  RETURN_IF_ERROR(backend->InsertStateRows(rows));
  return static_cast<int64_t>(rows.size());
}

}  // namespace contextd::store
