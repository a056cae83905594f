#include "trail/auto_scope.h"

#include <algorithm>
#include <cctype>

#include "base/str_cat.h"
#include "trail/internal/text.h"

namespace contextd::trail {
namespace {

using internal::OneLine;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view t) {
  while (!t.empty() && IsSpace(t.front())) t.remove_prefix(1);
  while (!t.empty() && IsSpace(t.back())) t.remove_suffix(1);
  return t;
}

// Reads the JSON string starting at t[*i] == '"' up to `end`, with the common escapes undone
// (others kept as written). False if it does not close before `end`.
bool ReadString(std::string_view t, size_t end, size_t* i, std::string* out) {
  for (size_t j = *i + 1; j < end; ++j) {
    char c = t[j];
    if (c == '"') {
      *i = j + 1;
      return true;
    }
    if (c == '\\' && j + 1 < end) {
      char e = t[++j];
      switch (e) {
        case 'n':
        case 't':
        case 'r':
          out->push_back(' ');
          break;
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        default:
          out->push_back('\\');
          out->push_back(e);
      }
      continue;
    }
    out->push_back(c);
  }
  return false;
}

// The members of the JSON object `t` (braces included) as "key=value, ...", or false if `t` is
// not a flat-enough object to read that way.
bool ObjectMembers(std::string_view t, size_t max_chars, std::string* out) {
  const size_t end = t.size() - 1;  // the closing brace
  size_t i = 1;
  auto skip = [&] {
    while (i < end && IsSpace(t[i])) ++i;
  };
  while (true) {
    skip();
    if (i >= end) return true;
    if (t[i] != '"') return false;
    std::string key;
    if (!ReadString(t, end, &i, &key)) return false;
    skip();
    if (i >= end || t[i] != ':') return false;
    ++i;
    skip();
    std::string value;
    if (i < end && t[i] == '"') {
      if (!ReadString(t, end, &i, &value)) return false;
    } else {
      size_t start = i;
      int depth = 0;
      bool in_string = false;
      for (; i < end; ++i) {
        char c = t[i];
        if (in_string) {
          if (c == '\\') {
            ++i;
          } else if (c == '"') {
            in_string = false;
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          --depth;
        } else if (c == ',' && depth == 0) {
          break;
        }
      }
      value = std::string(Trim(t.substr(start, std::min(i, end) - start)));
    }
    if (!out->empty()) *out += ", ";
    *out += base::StrCat(key, "=", value);
    // Long enough to be cut anyway: the rest cannot show.
    if (out->size() > max_chars) return true;
    skip();
    if (i >= end) return true;
    if (t[i] != ',') return false;
    ++i;
  }
}

const char* Plural(int64_t n, const char* one, const char* many) { return n == 1 ? one : many; }

// The "key=value" members of a sample (as ShortArguments writes them), split at ", ".
std::vector<std::string_view> Members(std::string_view sample) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= sample.size()) {
    size_t sep = sample.find(", ", start);
    if (sep == std::string_view::npos) sep = sample.size();
    out.push_back(sample.substr(start, sep - start));
    start = sep + 2;
  }
  return out;
}

// The path value of a member "key=/...", with a '/' appended (so that a directory argument
// compares as its own prefix), or "" if the member is not a path.
std::string PathOf(std::string_view member) {
  size_t eq = member.find('=');
  if (eq == std::string_view::npos || eq + 1 >= member.size() || member[eq + 1] != '/') return "";
  std::string path(member.substr(eq + 1));
  if (path.back() != '/') path.push_back('/');
  return path;
}

// `sample` with every path member under `dir` shown relative to it ("." for `dir` itself).
std::string Relative(std::string_view sample, std::string_view dir) {
  std::string out;
  for (std::string_view member : Members(sample)) {
    if (!out.empty()) out += ", ";
    std::string path = PathOf(member);
    if (!dir.empty() && !path.empty() && path.compare(0, dir.size(), dir) == 0) {
      std::string rest = path.substr(dir.size());
      if (!rest.empty()) rest.pop_back();  // the '/' PathOf appended
      out += base::StrCat(member.substr(0, member.find('=') + 1), rest.empty() ? "." : rest);
    } else {
      out += member;
    }
  }
  return out;
}

}  // namespace

std::string ShortArguments(std::string_view args_text, size_t max_chars) {
  std::string_view t = Trim(args_text);
  if (t.size() >= 2 && t.front() == '{' && t.back() == '}') {
    std::string members;
    if (ObjectMembers(t, max_chars, &members)) return OneLine(members, max_chars);
  }
  return OneLine(t, max_chars);
}

void AutoScopeDigest::Add(std::string_view label, std::string_view args_text,
                          std::string_view result_text, bool is_error, int64_t tokens) {
  std::string prefix = base::StrCat(upstream_, "__");
  std::string name;
  std::string sample;
  if (label.size() > prefix.size() && label.substr(0, prefix.size()) == prefix) {
    name = std::string(label.substr(prefix.size()));
    sample = ShortArguments(args_text, kAutoSummaryArgKeep);
  } else {
    name = "resource";
    std::string marker = base::StrCat("://", upstream_, "/");
    size_t at = label.find(marker);
    sample = OneLine(at == std::string_view::npos ? label : label.substr(at + marker.size()),
                     kAutoSummaryArgChars);
  }
  auto tool =
      std::find_if(tools_.begin(), tools_.end(), [&](const Tool& t) { return t.name == name; });
  if (tool == tools_.end()) {
    tools_.push_back(Tool{name, 0, {}, 0});
    tool = tools_.end() - 1;
  }
  ++tool->calls;
  if (!sample.empty()) {
    bool known =
        std::find(tool->samples.begin(), tool->samples.end(), sample) != tool->samples.end();
    if (!known && tool->samples.size() < kAutoSummaryArgSamples) {
      tool->samples.push_back(std::move(sample));
    } else if (!known) {
      ++tool->other_calls;
    }
  }
  ++calls_;
  tokens_ += tokens;
  if (is_error) {
    ++errors_;
    if (error_samples_.size() < kAutoSummaryErrorSamples) {
      std::string_view text = Trim(result_text);
      error_samples_.push_back(base::StrCat(
          name, ": ",
          text.empty() ? std::string("(no result)") : OneLine(text, kAutoSummaryErrorChars)));
    }
  }
}

std::string AutoScopeDigest::CommonDirectory() const {
  std::string common;
  int paths = 0;
  for (const Tool& t : tools_) {
    for (const std::string& sample : t.samples) {
      for (std::string_view member : Members(sample)) {
        std::string path = PathOf(member);
        if (path.empty()) continue;
        if (paths++ == 0) {
          common = path;
          continue;
        }
        size_t n = 0;
        while (n < common.size() && n < path.size() && common[n] == path[n]) ++n;
        common.resize(n);
      }
    }
  }
  // Back to a whole directory: up to and including the last '/'.
  size_t slash = common.rfind('/');
  common.resize(slash == std::string::npos ? 0 : slash + 1);
  return paths >= 2 && common.size() >= kAutoSummaryMinCommonDir ? common : "";
}

std::string AutoScopeDigest::Render(int level) const {
  std::string out =
      base::StrCat(upstream_, ": ", calls_, Plural(calls_, " call", " calls"), " (",
                   calls_ - errors_, " ok, ", errors_, Plural(errors_, " error", " errors"), "), ",
                   tokens_, Plural(tokens_, " token", " tokens"));
  size_t max_tools = level >= 3 ? 3 : kAutoSummaryMaxTools;
  std::string dir = level == 0 ? CommonDirectory() : "";
  std::string tools;
  for (size_t i = 0; i < tools_.size() && i < max_tools; ++i) {
    const Tool& t = tools_[i];
    if (!tools.empty()) tools += ", ";
    tools += base::StrCat(t.name, " x", t.calls);
    if (level == 0 && !t.samples.empty()) {
      tools += " (";
      for (size_t j = 0; j < t.samples.size(); ++j) {
        if (j > 0) tools += "; ";
        tools += OneLine(Relative(t.samples[j], dir), kAutoSummaryArgChars);
      }
      if (t.other_calls > 0) tools += base::StrCat("; +", t.other_calls, " more");
      tools += ")";
    }
  }
  if (tools_.size() > max_tools) {
    size_t more = tools_.size() - max_tools;
    tools +=
        base::StrCat(", +", more, Plural(static_cast<int64_t>(more), " more tool", " more tools"));
  }
  if (!tools.empty()) {
    out += base::StrCat("; ", dir.empty() ? "" : base::StrCat("paths under ", dir, ": "), tools);
  }
  if (level < 2 && !error_samples_.empty()) {
    out += "; errors: ";
    for (size_t j = 0; j < error_samples_.size(); ++j) {
      if (j > 0) out += "; ";
      out += error_samples_[j];
    }
    int64_t more = errors_ - static_cast<int64_t>(error_samples_.size());
    if (more > 0) out += base::StrCat("; +", more, " more");
  }
  return out;
}

std::string AutoScopeDigest::Summary(const CountTokensFn& count) const {
  auto tokens = [&](std::string_view text) {
    return count ? count(text) : internal::CountWords(text);
  };
  for (int level = 0; level <= 3; ++level) {
    std::string text = Render(level);
    if (tokens(text) <= kAutoSummaryMaxTokens) return text;
  }
  std::string text = Render(3);
  size_t keep = text.size();
  while (keep > 0) {
    keep = keep * 3 / 4;
    std::string cut = OneLine(text, keep);
    if (tokens(cut) <= kAutoSummaryMaxTokens) return cut;
  }
  return "...";
}

}  // namespace contextd::trail
