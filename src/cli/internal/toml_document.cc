#include "cli/internal/toml_document.h"

#include <toml++/toml.h>

#include <cstdio>
#include <sstream>

#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"

namespace contextd::cli::internal {
namespace {

bool IsBare(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool StartsWith(const std::string& t, size_t i, const char* s) { return t.compare(i, 3, s) == 0; }

void SkipSpaces(const std::string& t, size_t& i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
}

// Moves `i` past the next newline (or to the end).
void SkipLine(const std::string& t, size_t& i) {
  size_t nl = t.find('\n', i);
  i = nl == std::string::npos ? t.size() : nl + 1;
}

// Parses a (dotted) key at `i` up to `stop` ('=' or ']'), unquoting its parts; `i` ends on stop.
std::vector<std::string> ParseKey(const std::string& t, size_t& i) {
  std::vector<std::string> parts;
  while (i < t.size()) {
    SkipSpaces(t, i);
    std::string part;
    if (i < t.size() && t[i] == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i) {
        if (t[i] == '\\' && i + 1 < t.size()) ++i;  // \" and \\ (others are rare in keys)
        part += t[i];
      }
      ++i;
    } else if (i < t.size() && t[i] == '\'') {
      for (++i; i < t.size() && t[i] != '\''; ++i) part += t[i];
      ++i;
    } else {
      while (i < t.size() && IsBare(t[i])) part += t[i++];
    }
    parts.push_back(std::move(part));
    SkipSpaces(t, i);
    if (i < t.size() && t[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  return parts;
}

// Moves `i` from the start of a value past the newline that ends it: strings (all four kinds)
// and multi-line arrays are skipped whole, so a "[" inside them is never taken for a header.
void SkipValue(const std::string& t, size_t& i) {
  int depth = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == '"' || c == '\'') {
      bool escapes = c == '"';
      const char* triple = escapes ? "\"\"\"" : "'''";
      if (StartsWith(t, i, triple)) {
        i += 3;
        while (i < t.size() && !StartsWith(t, i, triple)) i += (escapes && t[i] == '\\') ? 2 : 1;
        i += 3;
        while (i < t.size() && t[i] == c) ++i;  // up to two quotes may end the content
      } else {
        for (++i; i < t.size() && t[i] != c && t[i] != '\n'; ++i) {
          if (escapes && t[i] == '\\') ++i;
        }
        ++i;
      }
    } else if (c == '#') {
      size_t nl = t.find('\n', i);
      i = nl == std::string::npos ? t.size() : nl;
    } else if (c == '[' || c == '{') {
      ++depth;
      ++i;
    } else if (c == ']' || c == '}') {
      --depth;
      ++i;
    } else if (c == '\n') {
      ++i;
      if (depth <= 0) return;
    } else {
      ++i;
    }
  }
}

std::vector<std::string> Split(const std::string& dotted) {
  std::vector<std::string> parts;
  std::stringstream s(dotted);
  std::string p;
  while (std::getline(s, p, '.')) parts.push_back(p);
  return parts;
}

bool HasPrefix(const std::vector<std::string>& key, const std::vector<std::string>& prefix) {
  return key.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), key.begin());
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

absl::StatusOr<toml::table> ParseToml(const std::string& text, const std::string& path,
                                      const char* what) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(base::StrCat(path, what, " (", e.description(), " at line ",
                                                   e.source().begin.line,
                                                   "); nothing was changed"));
  }
}

}  // namespace

std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

absl::StatusOr<std::unique_ptr<TomlDocument>> TomlDocument::Parse(const TextFile& f) {
  RETURN_IF_ERROR(ParseToml(f.text, f.path, " is not valid TOML").status());
  auto d = std::make_unique<TomlDocument>();
  d->path_ = f.path;
  d->text_ = f.text;
  return d;
}

std::vector<TomlDocument::Item> TomlDocument::Scan() const {
  const std::string& t = text_;
  std::vector<Item> items;
  size_t i = 0;
  while (i < t.size()) {
    size_t line = i;
    SkipSpaces(t, i);
    if (i >= t.size()) break;
    if (t[i] == '\n' || t[i] == '\r' || t[i] == '#') {
      SkipLine(t, i);
      continue;
    }
    Item item;
    item.begin = line;
    if (t[i] == '[') {
      item.header = true;
      ++i;
      if (i < t.size() && t[i] == '[') {
        item.array = true;
        ++i;
      }
      item.key = ParseKey(t, i);
      SkipLine(t, i);  // "]" or "]]", then spaces and a comment at most
    } else {
      item.key = ParseKey(t, i);
      if (i < t.size() && t[i] == '=') ++i;
      SkipValue(t, i);
    }
    item.end = i;
    items.push_back(std::move(item));
  }
  return items;
}

std::optional<std::pair<size_t, size_t>> TomlDocument::Find(const std::string& parent,
                                                            const std::string& key) const {
  std::vector<Item> items = Scan();
  if (parent.empty()) {
    for (const Item& it : items) {
      if (it.header) break;
      if (it.key == std::vector<std::string>{key}) return std::make_pair(it.begin, it.end);
    }
    return std::nullopt;
  }
  std::vector<std::string> path = Split(parent);
  path.push_back(key);
  for (size_t j = 0; j < items.size(); ++j) {
    if (!items[j].header || items[j].array || items[j].key != path) continue;
    size_t end = items[j].end;
    // Its entries, and the sub-tables ([path.x], [[path.y]]) that follow it directly.
    for (size_t k = j + 1; k < items.size(); ++k) {
      if (items[k].header &&
          !(items[k].key.size() > path.size() && HasPrefix(items[k].key, path))) {
        break;
      }
      end = items[k].end;
    }
    return std::make_pair(items[j].begin, end);
  }
  return std::nullopt;
}

std::optional<std::string> TomlDocument::GetString(const std::vector<std::string>& path) const {
  auto table = ParseToml(text_, path_, "");
  if (!table.ok() || path.empty()) return std::nullopt;
  toml::node_view<const toml::node> node = toml::node_view<const toml::node>(*table)[path[0]];
  for (size_t i = 1; i < path.size(); ++i) node = node[path[i]];
  if (auto s = node.value<std::string>()) return *s;
  return std::nullopt;
}

std::optional<OJson> TomlDocument::Get(const std::string& parent, const std::string& key) const {
  auto span = Find(parent, key);
  if (!span) return std::nullopt;
  return OJson(text_.substr(span->first, span->second - span->first));
}

bool TomlDocument::HasParent(const std::string& parent) const {
  if (parent.empty()) return true;
  std::vector<std::string> path = Split(parent);
  for (const Item& it : Scan()) {
    if (HasPrefix(it.key, path)) return true;
  }
  return false;
}

absl::Status TomlDocument::CheckEditable(const std::string& parent, const std::string& key) const {
  std::vector<std::string> path = Split(parent);
  if (parent.empty()) path.clear();
  path.push_back(key);
  ASSIGN_OR_RETURN(toml::table table, ParseToml(text_, path_, " is not valid TOML"));
  toml::node* node = nullptr;
  for (const std::string& p : path) {
    toml::table* t = node == nullptr ? &table : node->as_table();
    node = t == nullptr ? nullptr : t->get(p);
    if (node == nullptr) return absl::OkStatus();  // absent: connect adds it
  }
  if (Find(parent, key)) return absl::OkStatus();
  std::string name = Name(parent, key);
  return absl::InvalidArgumentError(base::StrCat(
      path_, ": ", name, " is defined in a form connect does not edit (",
      parent.empty() ? "not a top-level key before the first table"
                     : base::StrCat("not a [", name, "] table: an inline table, dotted keys or [[",
                                    name, "]]"),
      "); change it by hand; nothing was changed"));
}

void TomlDocument::Set(const std::string& parent, const std::string& key, const OJson& value) {
  std::string v = value.is_string() ? value.get<std::string>() : base::DumpJson(value);
  if (auto span = Find(parent, key)) {
    text_.replace(span->first, span->second - span->first, v);
    return;
  }
  auto newline_before = [this](size_t pos) {
    return pos > 0 && pos == text_.size() && text_.back() != '\n' ? "\n" : "";
  };
  if (!parent.empty()) {
    // A new table at the end, after one blank line.
    size_t n = text_.size();
    bool ends_blank = n < 2 || text_[n - 2] == '\n';
    std::string sep = n == 0 ? "" : text_.back() != '\n' ? "\n\n" : ends_blank ? "" : "\n";
    text_ += sep + v;
    return;
  }
  // A top-level key must come before the first table: after the last top-level entry, else
  // above the first header and the comment lines directly above it, else at the end.
  std::vector<Item> items = Scan();
  size_t pos = text_.size();
  bool after_entry = false;
  for (const Item& it : items) {
    if (it.header) {
      if (!after_entry) {
        pos = it.begin;
        while (pos > 0) {
          size_t prev = pos >= 2 ? text_.rfind('\n', pos - 2) : std::string::npos;
          size_t start = prev == std::string::npos ? 0 : prev + 1;
          if (Trim(text_.substr(start, pos - start)).rfind('#', 0) != 0) break;
          pos = start;
        }
      }
      break;
    }
    pos = it.end;
    after_entry = true;
  }
  text_.insert(pos, newline_before(pos) + v);
}

void TomlDocument::Erase(const std::string& parent, const std::string& key, bool) {
  auto span = Find(parent, key);
  if (!span) return;
  size_t b = span->first;
  text_.erase(b, span->second - b);
  // A table connect appended came after a blank line it added: take that line out again.
  if (!parent.empty() && b >= 2 && text_[b - 1] == '\n' && text_[b - 2] == '\n' &&
      (b == text_.size() || text_[b] == '\n')) {
    text_.erase(b - 1, 1);
  }
}

absl::StatusOr<std::string> TomlDocument::Serialize() const {
  RETURN_IF_ERROR(ParseToml(text_, path_, ": the edited file would not be valid TOML").status());
  return text_;
}

bool TomlDocument::Empty() const { return Trim(text_).empty(); }

std::string TomlDocument::Show(const OJson& value) const {
  std::string s = value.is_string() ? value.get<std::string>() : base::DumpJson(value);
  std::string t = Trim(s);
  if (t.empty() || t[0] != '[') {
    size_t eq = t.find('=');
    return eq == std::string::npos ? t : Trim(t.substr(eq + 1));
  }
  std::vector<std::string> entries;
  std::stringstream lines(t);
  std::string line;
  while (std::getline(lines, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    entries.push_back(line);
  }
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
  return out + "}";
}

}  // namespace contextd::cli::internal
