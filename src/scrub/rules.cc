// gitleaks TOML -> RulesConfig. The toml++ adapter: every toml++ exception is caught here and
// becomes an InvalidArgument naming the line (and column) or the key.
#include "scrub/rules.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scrub/internal/sv.h"

namespace contextd::scrub {
namespace {

std::string Where(const toml::node& n) {
  const auto& src = n.source();
  if (src.begin.line == 0) return "";
  return absl::StrCat(" (line ", static_cast<uint64_t>(src.begin.line), ")");
}

absl::Status BadKey(std::string_view ctx, std::string_view key, std::string_view want,
                    const toml::node& n) {
  return absl::InvalidArgumentError(absl::StrCat(internal::Av(ctx), ": key '", internal::Av(key),
                                                 "' must be ", internal::Av(want), Where(n)));
}

absl::Status GetString(const toml::table& t, std::string_view ctx, std::string_view key,
                       std::string* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  if (!n->is_string()) return BadKey(ctx, key, "a string", *n);
  *out = n->as_string()->get();
  return absl::OkStatus();
}

absl::Status GetStringArray(const toml::table& t, std::string_view ctx, std::string_view key,
                            std::vector<std::string>* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  const toml::array* a = n->as_array();
  if (a == nullptr) return BadKey(ctx, key, "an array of strings", *n);
  for (const toml::node& e : *a) {
    if (!e.is_string()) return BadKey(ctx, key, "an array of strings", e);
    out->push_back(e.as_string()->get());
  }
  return absl::OkStatus();
}

absl::Status GetNumber(const toml::table& t, std::string_view ctx, std::string_view key,
                       double* out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return absl::OkStatus();
  if (n->is_integer()) {
    *out = static_cast<double>(n->as_integer()->get());
  } else if (n->is_floating_point()) {
    *out = n->as_floating_point()->get();
  } else {
    return BadKey(ctx, key, "a number", *n);
  }
  return absl::OkStatus();
}

absl::Status ParseAllowlist(const toml::table& t, std::string_view ctx, AllowlistSpec* out) {
  RETURN_IF_ERROR(GetString(t, ctx, "description", &out->description));
  std::string condition;
  RETURN_IF_ERROR(GetString(t, ctx, "condition", &condition));
  std::string upper = absl::AsciiStrToUpper(condition);
  if (upper.empty() || upper == "OR") {
    out->condition = AllowlistCondition::kOr;
  } else if (upper == "AND" || upper == "&&") {
    out->condition = AllowlistCondition::kAnd;
  } else {
    return BadKey(ctx, "condition", "\"OR\" or \"AND\"", *t.get("condition"));
  }
  std::string target;
  RETURN_IF_ERROR(GetString(t, ctx, "regexTarget", &target));
  if (target.empty() || target == "secret") {
    out->regex_target = RegexTarget::kSecret;
  } else if (target == "match") {
    out->regex_target = RegexTarget::kMatch;
  } else if (target == "line") {
    out->regex_target = RegexTarget::kLine;
  } else {
    return BadKey(ctx, "regexTarget", "\"secret\", \"match\" or \"line\"", *t.get("regexTarget"));
  }
  RETURN_IF_ERROR(GetStringArray(t, ctx, "regexes", &out->regexes));
  RETURN_IF_ERROR(GetStringArray(t, ctx, "stopwords", &out->stopwords));
  for (std::string& s : out->stopwords) absl::AsciiStrToLower(&s);
  RETURN_IF_ERROR(GetStringArray(t, ctx, "paths", &out->paths));
  RETURN_IF_ERROR(GetStringArray(t, ctx, "commits", &out->commits));
  RETURN_IF_ERROR(GetStringArray(t, ctx, "targetRules", &out->target_rules));
  return absl::OkStatus();
}

// Reads `[key]` (one table) and `[[keys]]` (array of tables) allowlists from `t`.
absl::Status ParseAllowlists(const toml::table& t, std::string_view ctx,
                             std::vector<AllowlistSpec>* out) {
  if (const toml::node* n = t.get("allowlist")) {
    const toml::table* at = n->as_table();
    if (at == nullptr) return BadKey(ctx, "allowlist", "a table", *n);
    AllowlistSpec a;
    RETURN_IF_ERROR(ParseAllowlist(*at, absl::StrCat(internal::Av(ctx), " allowlist"), &a));
    out->push_back(std::move(a));
  }
  if (const toml::node* n = t.get("allowlists")) {
    const toml::array* arr = n->as_array();
    if (arr == nullptr) return BadKey(ctx, "allowlists", "an array of tables", *n);
    int i = 0;
    for (const toml::node& e : *arr) {
      const toml::table* at = e.as_table();
      if (at == nullptr) return BadKey(ctx, "allowlists", "an array of tables", e);
      AllowlistSpec a;
      RETURN_IF_ERROR(
          ParseAllowlist(*at, absl::StrCat(internal::Av(ctx), " allowlists[", i++, "]"), &a));
      out->push_back(std::move(a));
    }
  }
  return absl::OkStatus();
}

// `amends`: the file has [extend], so a rule may carry only an id and what it changes.
absl::Status ParseRule(const toml::table& t, int index, std::string_view source, bool amends,
                       RuleSpec* r) {
  std::string ctx = absl::StrCat(internal::Av(source), ": rules[", index, "]");
  RETURN_IF_ERROR(GetString(t, ctx, "id", &r->id));
  if (r->id.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(ctx, ": missing key 'id'", Where(t)));
  }
  ctx = absl::StrCat(internal::Av(source), ": rule '", r->id, "'");
  RETURN_IF_ERROR(GetString(t, ctx, "description", &r->description));
  RETURN_IF_ERROR(GetString(t, ctx, "regex", &r->regex));
  RETURN_IF_ERROR(GetString(t, ctx, "path", &r->path));
  if (r->regex.empty() && r->path.empty() && !amends) {
    return absl::InvalidArgumentError(absl::StrCat(ctx, ": needs 'regex' or 'path'", Where(t)));
  }
  double group = 0;
  RETURN_IF_ERROR(GetNumber(t, ctx, "secretGroup", &group));
  if (group < 0 || group > 100 || group != static_cast<int>(group)) {
    return BadKey(ctx, "secretGroup", "an integer from 0 to 100", *t.get("secretGroup"));
  }
  r->secret_group = static_cast<int>(group);
  RETURN_IF_ERROR(GetNumber(t, ctx, "entropy", &r->entropy));
  if (!(r->entropy >= 0 && r->entropy <= 64)) {
    return BadKey(ctx, "entropy", "a number from 0 to 64", *t.get("entropy"));
  }
  RETURN_IF_ERROR(GetStringArray(t, ctx, "keywords", &r->keywords));
  for (std::string& k : r->keywords) absl::AsciiStrToLower(&k);
  RETURN_IF_ERROR(GetStringArray(t, ctx, "tags", &r->tags));
  return ParseAllowlists(t, ctx, &r->allowlists);
}

absl::StatusOr<RulesConfig> FromTable(const toml::table& root, std::string_view source) {
  RulesConfig cfg;
  RETURN_IF_ERROR(GetString(root, source, "title", &cfg.title));
  if (const toml::node* n = root.get("extend")) {
    const toml::table* et = n->as_table();
    if (et == nullptr) return BadKey(source, "extend", "a table", *n);
    std::string ctx = absl::StrCat(internal::Av(source), ": [extend]");
    if (const toml::node* u = et->get("useDefault")) {
      if (!u->is_boolean()) return BadKey(ctx, "useDefault", "a boolean", *u);
      cfg.extend_use_default = u->as_boolean()->get();
    }
    RETURN_IF_ERROR(GetString(*et, ctx, "path", &cfg.extend_path));
    if (cfg.extend_use_default && !cfg.extend_path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ctx, ": 'useDefault' and 'path' cannot both be set", Where(*et)));
    }
    if (et->get("url") != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          ctx, ": 'url' is not supported (gitleaks does not implement it either)", Where(*et)));
    }
    RETURN_IF_ERROR(GetStringArray(*et, ctx, "disabledRules", &cfg.extend_disabled_rules));
  }
  const bool amends = cfg.extend_use_default || !cfg.extend_path.empty();
  RETURN_IF_ERROR(ParseAllowlists(root, source, &cfg.allowlists));
  if (const toml::node* n = root.get("rules")) {
    const toml::array* arr = n->as_array();
    if (arr == nullptr) return BadKey(source, "rules", "an array of tables ([[rules]])", *n);
    int i = 0;
    for (const toml::node& e : *arr) {
      const toml::table* rt = e.as_table();
      if (rt == nullptr) return BadKey(source, "rules", "an array of tables ([[rules]])", e);
      RuleSpec r;
      RETURN_IF_ERROR(ParseRule(*rt, i++, source, amends, &r));
      cfg.rules.push_back(std::move(r));
    }
  }
  return cfg;
}

}  // namespace

absl::StatusOr<RulesConfig> ParseRulesToml(std::string_view toml_text,
                                           std::string_view source_name) {
  try {
    toml::table root = toml::parse(toml_text, source_name);
    return FromTable(root, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return absl::InvalidArgumentError(absl::StrCat(
        internal::Av(source_name), ":", static_cast<uint64_t>(b.line), ":",
        static_cast<uint64_t>(b.column), ": TOML syntax error: ", internal::Av(e.description())));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(internal::Av(source_name), ": ", e.what()));
  }
}

absl::StatusOr<RulesConfig> DefaultRules() {
  absl::StatusOr<RulesConfig> cfg = ParseRulesToml(DefaultRulesToml(), "default_rules.toml");
  if (!cfg.ok()) return absl::InternalError(cfg.status().message());
  for (RuleSpec& r : cfg->rules) r.require_digit = absl::StartsWith(r.id, "generic");
  return cfg;
}

RulesConfig ExtendRules(RulesConfig base, RulesConfig top) {
  std::unordered_set<std::string> disabled(top.extend_disabled_rules.begin(),
                                           top.extend_disabled_rules.end());
  std::unordered_map<std::string, RuleSpec*> amend;
  for (RuleSpec& r : top.rules) amend.emplace(r.id, &r);
  RulesConfig out;
  out.title = top.title.empty() ? base.title : top.title;
  std::unordered_set<std::string> used;
  for (RuleSpec& b : base.rules) {
    if (disabled.count(b.id) > 0) continue;
    auto it = amend.find(b.id);
    if (it != amend.end()) {
      RuleSpec& t = *it->second;
      if (!t.description.empty()) b.description = t.description;
      if (!t.regex.empty()) {
        // A secretGroup numbers the groups of its own regex: a new regex brings its own (gitleaks
        // keeps base's non-zero one, which may then point past the new regex's groups).
        b.regex = t.regex;
        b.secret_group = t.secret_group;
      } else if (t.secret_group != 0) {
        b.secret_group = t.secret_group;
      }
      if (!t.path.empty()) b.path = t.path;
      if (t.entropy != 0) b.entropy = t.entropy;
      b.keywords.insert(b.keywords.end(), t.keywords.begin(), t.keywords.end());
      b.tags.insert(b.tags.end(), t.tags.begin(), t.tags.end());
      for (AllowlistSpec& a : t.allowlists) b.allowlists.push_back(std::move(a));
      used.insert(b.id);
    }
    out.rules.push_back(std::move(b));
  }
  for (RuleSpec& t : top.rules) {
    if (used.count(t.id) == 0) out.rules.push_back(std::move(t));
  }
  out.allowlists = std::move(top.allowlists);
  for (AllowlistSpec& a : base.allowlists) out.allowlists.push_back(std::move(a));
  return out;
}

absl::StatusOr<RulesConfig> LoadRulesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string msg = absl::StrCat("cannot read rules file ", path, ": ", std::strerror(err));
    if (err == EACCES) return absl::PermissionDeniedError(msg);
    return absl::NotFoundError(msg);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseRulesToml(ss.str(), path);
}

}  // namespace contextd::scrub
