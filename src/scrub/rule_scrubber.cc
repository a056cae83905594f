#include "scrub/rule_scrubber.h"

#include <algorithm>
#include <unordered_set>

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

absl::StatusOr<RulesConfig> ResolveRules(const ScrubConfig& config) {
  ASSIGN_OR_RETURN(RulesConfig defaults, ParseRulesToml(DefaultRulesToml(), "default_rules.toml"));
  if (config.rules_file.empty()) return defaults;
  ASSIGN_OR_RETURN(RulesConfig user, LoadRulesFile(config.rules_file));
  if (!config.extend_default && !user.extend_use_default) return user;
  RulesConfig merged = std::move(defaults);
  std::unordered_set<std::string> disabled(user.extend_disabled_rules.begin(),
                                           user.extend_disabled_rules.end());
  std::unordered_set<std::string> user_ids;
  for (const auto& r : user.rules) user_ids.insert(r.id);
  merged.rules.erase(std::remove_if(merged.rules.begin(), merged.rules.end(),
                                    [&](const RuleSpec& r) {
                                      return disabled.count(r.id) > 0 || user_ids.count(r.id) > 0;
                                    }),
                     merged.rules.end());
  for (auto& r : user.rules) {
    if (disabled.count(r.id) == 0) merged.rules.push_back(std::move(r));
  }
  for (auto& a : user.allowlists) merged.allowlists.push_back(std::move(a));
  if (!user.title.empty()) merged.title = user.title;
  return merged;
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
