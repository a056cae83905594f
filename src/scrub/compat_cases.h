// Scoring a rules config against labelled example cases (the JSON Lines format of
// ../shared/compat/gitleaks/cases.jsonl, see ../shared/compat/README.md): which secret cases keep
// a byte of their secret, which clean cases change. Used by gitleaks_compat_test and
// bench/scrub/scrub_eval (--cases); not linked into the server. Pure functions; thread-compatible.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scrub/rules.h"

namespace contextd::scrub {

// One labelled example: a document that must lose `secret` (expect "secret"), or must come out
// unchanged (expect "clean"; when other_rules is non-empty, the text is a real match of those
// rules, so it is scored against its own rule alone).
struct CompatCase {
  std::string id;
  std::string rule_id;
  bool expect_secret = false;
  std::string text;
  std::string secret;  // empty for clean cases
  std::vector<std::string> other_rules;
};

// Reads a cases file (one JSON object a line; blank lines skipped). NotFound when it cannot be
// read, InvalidArgument (naming the line) when a line is not such an object.
absl::StatusOr<std::vector<CompatCase>> LoadCompatCases(const std::string& path);

// True when every byte of every occurrence of `secret` in `input` was replaced by a redaction
// marker in `output` (the marker's own preview does not count as surviving). The redacted
// spans are found by aligning the text between the markers of `output` with `input`.
bool SecretRedacted(std::string_view input, std::string_view secret, std::string_view output);

struct CompatRuleScore {
  size_t secret_cases = 0, secret_redacted = 0;
  size_t clean_cases = 0, clean_changed = 0;
};

struct CompatReport {
  std::map<std::string, CompatRuleScore> per_rule;  // by the cases' rule_id
  CompatRuleScore total;
  std::vector<std::string> missed;    // ids of secret cases whose secret survived
  std::vector<std::string> changed;   // ids of clean cases that changed
  std::vector<std::string> problems;  // rules of `config` that did not compile, "id: reason"
};

// Scrubs every case with `config` (path-less text, as Scrubber::Scrub) and scores it. Secret
// cases are scrubbed with the whole config (own_rule_only: with the case's own rule alone, as
// gitleaks tests its examples); clean cases with the whole config, or, when they list
// other_rules, with their own rule alone. A case whose rule is not in `config` is scored with
// the whole config. InvalidArgument when `config` does not build (duplicate ids).
absl::StatusOr<CompatReport> ScoreCompatCases(const RulesConfig& config,
                                              const std::vector<CompatCase>& cases,
                                              bool own_rule_only = false);

}  // namespace contextd::scrub
