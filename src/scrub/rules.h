// Rule configuration in the gitleaks TOML format: the plain data model (rules, allowlists) and the
// parser that reads it. Nothing here compiles regexes; see rule_scrubber.h. Parsing is a pure
// function of its input and is thread-safe; the structs are plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace contextd::scrub {

// What an allowlist regex is matched against (gitleaks `regexTarget`).
enum class RegexTarget { kSecret, kMatch, kLine };

// How the checks of one allowlist combine (gitleaks `condition`): OR (any check) or AND (all
// configured checks).
enum class AllowlistCondition { kOr, kAnd };

// One gitleaks allowlist (global `[allowlist]`/`[[allowlists]]` or per rule
// `[rules.allowlist]`/`[[rules.allowlists]]`). Regexes are uncompiled Go/RE2 syntax.
struct AllowlistSpec {
  std::string description;
  AllowlistCondition condition = AllowlistCondition::kOr;
  RegexTarget regex_target = RegexTarget::kSecret;
  std::vector<std::string> regexes;
  std::vector<std::string> stopwords;
  std::vector<std::string> paths;
  std::vector<std::string> commits;
  // Global allowlists only: when non-empty, the allowlist applies only to these rule ids.
  std::vector<std::string> target_rules;
};

// One gitleaks `[[rules]]` entry. `regex` and `path` are uncompiled Go/RE2 syntax; either may be
// empty (but not both, for a valid rule).
struct RuleSpec {
  std::string id;
  std::string description;
  std::string regex;
  std::string path;
  int secret_group = 0;               // 0: the first non-empty capture group, or the whole match.
  double entropy = 0;                 // 0: no entropy threshold.
  std::vector<std::string> keywords;  // lower-cased at parse time.
  std::vector<std::string> tags;
  std::vector<AllowlistSpec> allowlists;
  // Not a gitleaks key: the secret must contain a digit (what gitleaks did for ids starting with
  // "generic" before 8.19). Set on contextd's built-in generic rules (DefaultRules), whose
  // precision relies on it; false for every rule read from a file.
  bool require_digit = false;
};

// A whole gitleaks config file.
struct RulesConfig {
  std::string title;
  std::vector<RuleSpec> rules;
  std::vector<AllowlistSpec> allowlists;  // global allowlists
  // `[extend]`: useDefault asks for the built-in defaults underneath, path for another rules
  // file (as written: ResolveRules reads it relative to this file's directory); disabledRules
  // drops ids of the extended config. At most one of useDefault and path (InvalidArgument).
  bool extend_use_default = false;
  std::string extend_path;
  std::vector<std::string> extend_disabled_rules;
};

// Parses gitleaks TOML text. `source_name` (a file name) prefixes error messages.
// InvalidArgument when the TOML is malformed (the message names line and column) or a known key
// has the wrong type or value (the message names the rule id or table and the key). Unknown keys
// are ignored, as gitleaks does. A rule needs `regex` or `path`, except in a file with
// `[extend]`, where a rule may only amend the extended config's rule of the same id (ExtendRules;
// ResolveRules reports one that amends nothing).
absl::StatusOr<RulesConfig> ParseRulesToml(std::string_view toml_text,
                                           std::string_view source_name);

// Reads and parses a gitleaks TOML file. NotFound / PermissionDenied when it cannot be read,
// otherwise as ParseRulesToml.
absl::StatusOr<RulesConfig> LoadRulesFile(const std::string& path);

// The project's default rules (gitleaks TOML, embedded in the binary at build time).
std::string_view DefaultRulesToml();

// DefaultRulesToml parsed, with require_digit set on the rules whose id starts with "generic".
// Internal if it fails (the embedded file is tested).
absl::StatusOr<RulesConfig> DefaultRules();

// `top` extending `base` as gitleaks' [extend] does: base's rules not in top's disabledRules, in
// base's order, each amended by top's rule of the same id (top's non-empty description, regex,
// path, non-zero secretGroup and entropy replace base's; keywords, tags and allowlists are
// appended), then top's other rules in top's order; the allowlists of both. One difference: an
// amendment with a regex also brings its secretGroup, 0 included (gitleaks keeps base's
// non-zero secretGroup, which numbers the groups of the regex it replaced). The result has no
// [extend] of its own (top's title if it has one).
RulesConfig ExtendRules(RulesConfig base, RulesConfig top);

}  // namespace contextd::scrub
