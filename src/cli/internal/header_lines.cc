#include "cli/internal/header_lines.h"

#include <vector>

#include "base/str_cat.h"

namespace contextd::cli::internal {
namespace {

// The block's lines, split on '\n' (a '\r' stays at the end of its line). A block ending in
// '\n' ends with an empty line, so joining gives the block back.
std::vector<std::string> Split(std::string_view block) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = block.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.emplace_back(block.substr(start));
      return lines;
    }
    lines.emplace_back(block.substr(start, nl - start));
    start = nl + 1;
  }
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out.push_back('\n');
    out += lines[i];
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  const char* kBlank = " \t\r";
  size_t b = s.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(kBlank);
  return s.substr(b, e - b + 1);
}

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// The line's header name, or nullopt for a line without ':' or with an empty name.
std::optional<std::string_view> NameOf(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view name = Trim(line.substr(0, colon));
  if (name.empty()) return std::nullopt;
  return name;
}

bool Names(std::string_view line, std::string_view name) {
  std::optional<std::string_view> n = NameOf(line);
  return n && SameName(*n, name);
}

bool EndsWithCr(std::string_view line) { return !line.empty() && line.back() == '\r'; }

}  // namespace

std::optional<std::string> HeaderLineValue(std::string_view block, std::string_view name) {
  for (const std::string& line : Split(block)) {
    if (Names(line, name)) {
      return std::string(Trim(std::string_view(line).substr(line.find(':') + 1)));
    }
  }
  return std::nullopt;
}

std::string SetHeaderLine(std::string_view block, std::string_view name, std::string_view value) {
  std::string fresh = base::StrCat(name, ": ", value);
  if (block.empty()) return fresh;
  std::vector<std::string> lines = Split(block);
  std::vector<std::string> out;
  bool set = false;
  for (std::string& line : lines) {
    if (!Names(line, name)) {
      out.push_back(std::move(line));
    } else if (!set) {
      out.push_back(fresh + (EndsWithCr(line) ? "\r" : ""));
      set = true;
    }
  }
  if (set) return Join(out);
  // Appended as the last line, before the final line break when the block ends with one, in the
  // block's own line ending.
  const bool final_break = out.size() > 1 && out.back().empty();
  const size_t at = final_break ? out.size() - 1 : out.size();
  const bool crlf = at > 0 && EndsWithCr(out[at - 1]);
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), fresh + (crlf ? "\r" : ""));
  return Join(out);
}

std::string RemoveHeaderLine(std::string_view block, std::string_view name) {
  std::vector<std::string> kept;
  for (std::string& line : Split(block)) {
    if (!Names(line, name)) kept.push_back(std::move(line));
  }
  return Join(kept);
}

}  // namespace contextd::cli::internal
