#include "scrub/rule_scrubber.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scrub/internal/engine.h"
#include "scrub/originals_archive.h"

namespace contextd::scrub {

// The engine, under the name the public header forward-declares.
struct RuleScrubber::Impl : internal::Engine {};

RuleScrubber::RuleScrubber(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RuleScrubber::~RuleScrubber() = default;

absl::StatusOr<std::unique_ptr<RuleScrubber>> RuleScrubber::Create(const RulesConfig& config,
                                                                   int decode_depth) {
  if (decode_depth < 0 || decode_depth > kMaxDecodeDepth) {
    return absl::InvalidArgumentError(absl::StrCat("scrub.decode_depth must be between 0 and ",
                                                   kMaxDecodeDepth, ", got ", decode_depth));
  }
  auto impl = std::make_unique<Impl>();
  RETURN_IF_ERROR(impl->Compile(config));
  impl->decode_depth = decode_depth;
  return std::unique_ptr<RuleScrubber>(new RuleScrubber(std::move(impl)));
}

std::vector<Finding> RuleScrubber::Scan(std::string_view text, std::string_view path) const {
  std::vector<std::pair<size_t, size_t>> markers;
  std::vector<internal::Hit> hits = impl_->ScanOnce(text, path, &markers, nullptr);
  impl_->AddDecodedHits(text, path, markers, nullptr, &hits);
  return impl_->ToFindings(text, hits);
}

RuleScrubber::Result RuleScrubber::ScrubWithFindings(std::string_view text,
                                                     std::string_view path) const {
  Result r;
  std::vector<internal::Hit> first;
  r.text = impl_->ScrubText(text, path, &first);
  r.findings = impl_->ToFindings(text, first);
  return r;
}

std::string RuleScrubber::Scrub(std::string_view text) const {
  std::vector<internal::Hit> first;
  return impl_->ScrubText(text, {}, &first);
}

const std::vector<CompileProblem>& RuleScrubber::problems() const { return impl_->problems; }
size_t RuleScrubber::num_rules() const { return impl_->rules.size(); }
std::vector<std::string> RuleScrubber::rule_ids() const {
  std::vector<std::string> ids;
  for (const auto& r : impl_->rules) ids.push_back(r.id);
  return ids;
}

namespace {

// How many files deep [extend] path may go: the rules file, the file it extends, and the one
// that extends (gitleaks' maxExtendDepth is 2 as well; it silently ignores a deeper [extend],
// we refuse it, which also ends a cycle).
constexpr int kMaxExtendDepth = 2;

// `path` with its [extend] chain applied. *with_defaults: the built-in rules are part of it;
// *disabled: the disabledRules of the file at depth 0.
absl::StatusOr<RulesConfig> LoadExtended(const std::string& path, int depth,
                                         std::vector<std::string>* chain, bool* with_defaults,
                                         std::vector<std::string>* disabled) {
  chain->push_back(path);
  ASSIGN_OR_RETURN(RulesConfig cfg, LoadRulesFile(path));
  if (depth == 0) *disabled = cfg.extend_disabled_rules;
  if (cfg.extend_use_default) {
    ASSIGN_OR_RETURN(RulesConfig defaults, DefaultRules());
    *with_defaults = true;
    return ExtendRules(std::move(defaults), std::move(cfg));
  }
  if (cfg.extend_path.empty()) return cfg;
  std::filesystem::path next(cfg.extend_path);
  if (next.is_relative()) next = std::filesystem::path(path).parent_path() / next;
  if (depth + 1 > kMaxExtendDepth) {
    std::string names;
    for (const std::string& p : *chain) absl::StrAppend(&names, p, " -> ");
    return absl::InvalidArgumentError(absl::StrCat("[extend] path goes more than ", kMaxExtendDepth,
                                                   " files deep: ", names, next.string()));
  }
  ASSIGN_OR_RETURN(RulesConfig base,
                   LoadExtended(next.string(), depth + 1, chain, with_defaults, disabled));
  return ExtendRules(std::move(base), std::move(cfg));
}

}  // namespace

absl::StatusOr<RulesConfig> ResolveRules(const ScrubConfig& config) {
  if (config.rules_file.empty()) return DefaultRules();
  std::vector<std::string> chain, disabled;
  bool with_defaults = false;
  ASSIGN_OR_RETURN(RulesConfig rules,
                   LoadExtended(config.rules_file, 0, &chain, &with_defaults, &disabled));
  if (config.extend_default && !with_defaults) {
    // The server's choice: the built-ins under the whole chain, as if the rules file had
    // [extend] useDefault = true (its disabledRules drop built-in ids; its rules amend built-in
    // rules of the same id).
    ASSIGN_OR_RETURN(RulesConfig defaults, DefaultRules());
    rules.extend_disabled_rules = std::move(disabled);
    rules = ExtendRules(std::move(defaults), std::move(rules));
  }
  for (const RuleSpec& r : rules.rules) {
    if (r.regex.empty() && r.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.rules_file, ": rule '", r.id,
                       "' has no 'regex' or 'path' and amends no rule of the extended config"));
    }
  }
  return rules;
}

absl::StatusOr<std::shared_ptr<const RuleScrubber>> BuildScrubber(const ScrubConfig& config) {
  if (config.archive_originals) {
    if (config.key_file.empty()) {
      return absl::InvalidArgumentError(
          "scrub.archive_originals is true but scrub.key_file is not set");
    }
    ASSIGN_OR_RETURN(ArchiveKey key, LoadArchiveKey(config.key_file));
    (void)key;
  }
  ASSIGN_OR_RETURN(RulesConfig rules, ResolveRules(config));
  ASSIGN_OR_RETURN(std::unique_ptr<RuleScrubber> s,
                   RuleScrubber::Create(rules, config.decode_depth));
  return std::shared_ptr<const RuleScrubber>(std::move(s));
}

}  // namespace contextd::scrub
