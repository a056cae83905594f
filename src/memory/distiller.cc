#include "memory/distiller.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memory/internal/sv.h"

namespace contextd::memory {
namespace {

using internal::Sv;

constexpr size_t kMaxListed = 5;

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// `text` with runs that only identify one run (branch, memory and session ids, hashes of 16+
// hex digits) replaced by "<id>": a memory is about what to do, not about which run did it.
std::string WithoutIds(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (i == 0 || !IsWordChar(text[i - 1])) {
      size_t j = i;
      for (std::string_view p : {"br_", "mem_", "ses_", "auto_"}) {
        if (text.substr(i, p.size()) == p) j = i + p.size();
      }
      size_t k = j;
      while (k < text.size() && IsHex(text[k])) ++k;
      if (k - j >= 16 && (k == text.size() || !IsWordChar(text[k]))) {
        out += "<id>";
        i = k;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

// One line, whitespace collapsed, at most `max` bytes (cut at a UTF-8 boundary, "..." added).
std::string OneLine(std::string_view text, size_t max) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
    if (out.size() >= max) break;
  }
  if (out.size() >= max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

// The first `n` sentences of `text` (ending at ". ", "! ", "? " or a newline), on one line.
std::string Sentences(std::string_view text, int n, size_t max) {
  size_t end = 0;
  int found = 0;
  for (size_t i = 0; i < text.size() && found < n; ++i) {
    char c = text[i];
    bool stop = c == '\n' ||
                ((c == '.' || c == '!' || c == '?') &&
                 (i + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[i + 1]))));
    if (stop && absl::StripAsciiWhitespace(Sv(text.substr(end, i - end + 1))).size() > 1) {
      ++found;
    }
    if (stop) end = i + 1;
  }
  if (found < n) end = text.size();
  return OneLine(text.substr(0, end), max);
}

// The string value of `"key":"..."` in JSON-ish `args`, unescaped minimally; "" if absent.
std::string StringField(std::string_view args, std::string_view key) {
  std::string needle = absl::StrCat("\"", Sv(key), "\"");
  size_t at = args.find(needle);
  if (at == std::string_view::npos) return "";
  at = args.find(':', at + needle.size());
  if (at == std::string_view::npos) return "";
  at = args.find_first_not_of(" \t\r\n", at + 1);
  if (at == std::string_view::npos || args[at] != '"') return "";
  std::string out;
  for (size_t i = at + 1; i < args.size(); ++i) {
    if (args[i] == '\\' && i + 1 < args.size()) {
      char e = args[++i];
      out.push_back(e == 'n' ? ' ' : e == 't' ? ' ' : e);
    } else if (args[i] == '"') {
      break;
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

// Path-like words of `text`: with a '/' or a file extension, not URLs, at most `limit`.
void CollectPaths(std::string_view text, std::vector<std::string>& out, std::set<std::string>& seen,
                  size_t limit) {
  size_t i = 0;
  while (i < text.size() && out.size() < limit) {
    while (i < text.size() && !(IsWordChar(text[i]) || text[i] == '/' || text[i] == '.')) ++i;
    size_t j = i;
    while (j < text.size() &&
           (IsWordChar(text[j]) || text[j] == '/' || text[j] == '.' || text[j] == '-')) {
      ++j;
    }
    std::string_view w = text.substr(i, j - i);
    i = j + 1;
    while (!w.empty() && (w.back() == '.' || w.back() == '/')) w.remove_suffix(1);
    if (w.size() < 4 || w.size() > 120) continue;
    size_t dot = w.rfind('.');
    bool has_ext = dot != std::string_view::npos && dot + 1 < w.size() && w.size() - dot <= 5 &&
                   std::isalpha(static_cast<unsigned char>(w[dot + 1])) != 0 && dot > 0;
    bool has_slash = w.find('/') != std::string_view::npos && w.size() > 1;
    if (!(has_ext || has_slash) || absl::StartsWith(Sv(w), "//")) continue;
    if (seen.insert(std::string(w)).second) out.push_back(std::string(w));
  }
}

bool LooksLikeError(std::string_view line) {
  for (std::string_view marker : {"Error", "error:", "Traceback", "FAILED", "Exception",
                                  "fatal:", "No such file", "not found", "Permission denied"}) {
    if (line.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

// The first error-looking line of `text`.
std::string ErrorLine(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    absl::string_view stripped = absl::StripAsciiWhitespace(Sv(text.substr(start, end - start)));
    std::string_view line(stripped.data(), stripped.size());
    if (LooksLikeError(line)) return OneLine(line, 160);
    start = end + 1;
  }
  return "";
}

struct Facts {
  std::vector<std::string> paths;     // looked at
  std::vector<std::string> commands;  // ran
  std::vector<std::string> tools;     // tool names, in first-use order
  std::vector<std::string> errors;    // distinct error lines met
};

Facts Gather(const BranchTrace& trace) {
  Facts f;
  std::set<std::string> seen_paths, seen_tools, seen_commands, seen_errors;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == "tool_call") {
      if (!e.label.empty() && seen_tools.insert(e.label).second) f.tools.push_back(e.label);
      std::string command = StringField(e.text, "command");
      if (!command.empty() && f.commands.size() < kMaxListed &&
          seen_commands.insert(command).second) {
        f.commands.push_back(OneLine(command, 80));
      }
      CollectPaths(e.text, f.paths, seen_paths, kMaxListed);
    } else if (e.kind == "tool_result") {
      std::string line = ErrorLine(std::string_view(e.text).substr(0, 16384));
      if (line.empty() && e.is_error) line = OneLine(e.text, 160);
      if (!line.empty() && f.errors.size() < 2 && seen_errors.insert(line).second) {
        f.errors.push_back(line);
      }
    }
  }
  return f;
}

std::string Did(const Facts& f) {
  std::vector<std::string> parts;
  if (!f.paths.empty()) parts.push_back(absl::StrCat("looked at ", absl::StrJoin(f.paths, ", ")));
  if (!f.commands.empty()) {
    parts.push_back(absl::StrCat("ran `", absl::StrJoin(f.commands, "`, `"), "`"));
  } else if (!f.tools.empty()) {
    std::vector<std::string> tools(f.tools.begin(),
                                   f.tools.begin() + std::min(f.tools.size(), kMaxListed));
    parts.push_back(absl::StrCat("used ", absl::StrJoin(tools, ", ")));
  }
  return absl::StrJoin(parts, "; ");
}

std::vector<std::string> Tags(const Facts& f) {
  std::vector<std::string> tags;
  for (const std::string& t : f.tools) {
    if (tags.size() >= kMaxListed) break;
    tags.push_back(t.substr(0, 64));
  }
  return tags;
}

}  // namespace

absl::StatusOr<std::vector<Candidate>> StructuralDistiller::Distill(const BranchTrace& trace) {
  const Facts facts = Gather(trace);
  const std::string task = OneLine(WithoutIds(trace.description), 160);
  const std::string did = WithoutIds(Did(facts));
  const std::string concluded = Sentences(WithoutIds(trace.summary), 2, 400);
  std::vector<Candidate> out;
  if (trace.succeeded) {
    Candidate c;
    c.title = OneLine(task, 120);
    c.description = absl::StrCat("How a task like \"", task, "\" was done.");
    c.content = concluded.empty() ? "Completed." : absl::StrCat("Found: ", concluded);
    if (!did.empty()) absl::StrAppend(&c.content, " Way there: ", did, ".");
    c.outcome = Outcome::kSuccess;
    c.tags = Tags(facts);
    out.push_back(std::move(c));
    if (!facts.errors.empty()) {
      Candidate p;
      p.title = OneLine(absl::StrCat("Pitfall: ", task), 120);
      p.description = absl::StrCat("An error met on the way to \"", task, "\".");
      p.content = absl::StrCat("Met: ", WithoutIds(absl::StrJoin(facts.errors, " / ")),
                               ". It did not stop the task; see how it ended: ",
                               concluded.empty() ? "completed." : concluded);
      p.outcome = Outcome::kFailure;
      p.tags = Tags(facts);
      out.push_back(std::move(p));
    }
  } else {
    Candidate c;
    c.title = OneLine(absl::StrCat("Avoid: ", task), 120);
    c.description = absl::StrCat("What went wrong on a task like \"", task, "\".");
    c.content = absl::StrCat("It ended without a result (", OneLine(trace.finish_reason, 160), ")");
    if (!did.empty()) absl::StrAppend(&c.content, " after it ", did);
    absl::StrAppend(&c.content, ".");
    if (!facts.errors.empty()) {
      absl::StrAppend(&c.content, " Errors met: ", WithoutIds(absl::StrJoin(facts.errors, " / ")),
                      ".");
    }
    absl::StrAppend(&c.content, " Narrow the task or give it more budget or time.");
    c.outcome = Outcome::kFailure;
    c.tags = Tags(facts);
    out.push_back(std::move(c));
  }
  for (Candidate& c : out) {
    if (c.content.size() > 1900) c.content = OneLine(c.content, 1900);
  }
  return out;
}

}  // namespace contextd::memory
