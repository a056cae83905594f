#include "scrub/compat_cases.h"

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

absl::StatusOr<CompatCase> ParseCase(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line);  // throws; caught by the caller
  CompatCase c;
  c.id = j.at("id").get<std::string>();
  c.rule_id = j.at("rule_id").get<std::string>();
  const std::string expect = j.at("expect").get<std::string>();
  if (expect != "secret" && expect != "clean") {
    return absl::InvalidArgumentError(absl::StrCat("expect must be secret or clean, not ", expect));
  }
  c.expect_secret = expect == "secret";
  c.text = j.at("text").get<std::string>();
  if (c.expect_secret) {
    c.secret = j.at("secret").get<std::string>();
    if (c.secret.empty()) return absl::InvalidArgumentError("a secret case needs a secret");
  }
  if (j.contains("other_rules") && j["other_rules"].is_array()) {
    for (const auto& r : j["other_rules"]) c.other_rules.push_back(r.get<std::string>());
  }
  return c;
}

}  // namespace

absl::StatusOr<std::vector<CompatCase>> LoadCompatCases(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read cases file ", path));
  std::vector<CompatCase> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<CompatCase> c;
    try {
      c = ParseCase(line);
    } catch (const std::exception& e) {
      c = absl::InvalidArgumentError(e.what());
    }
    if (!c.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": ", c.status().message()));
    }
    out.push_back(*std::move(c));
  }
  return out;
}

bool SecretRedacted(std::string_view input, std::string_view secret, std::string_view output) {
  if (secret.empty()) return true;
  // The unchanged pieces of `output`, between markers, in order.
  std::vector<std::string_view> kept;
  size_t piece = 0;
  for (size_t pos = output.find('['); pos != std::string_view::npos; pos = output.find('[', pos)) {
    size_t len = 0;
    if (!ParseMarker(output, pos, &len)) {
      ++pos;
      continue;
    }
    kept.push_back(output.substr(piece, pos - piece));
    piece = pos + len;
    pos = piece;
  }
  kept.push_back(output.substr(piece));
  // Align them with `input`: the first is a prefix, the last a suffix, each marker replaced at
  // least one byte. redacted[i]: input byte i lies in no kept piece.
  std::vector<bool> redacted(input.size(), true);
  size_t at = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    size_t p;
    if (i == 0) {
      p = 0;
      if (input.substr(0, kept[0].size()) != kept[0]) return false;
    } else if (i + 1 == kept.size()) {
      if (kept[i].size() > input.size()) return false;
      p = input.size() - kept[i].size();
      if (p < at + 1 || input.substr(p) != kept[i]) return false;
    } else {
      p = input.find(kept[i], at + 1);
      if (p == std::string_view::npos) return false;
    }
    for (size_t k = p; k < p + kept[i].size(); ++k) redacted[k] = false;
    at = p + kept[i].size();
  }
  bool found = false;
  for (size_t s = input.find(secret); s != std::string_view::npos; s = input.find(secret, s + 1)) {
    found = true;
    for (size_t k = s; k < s + secret.size(); ++k) {
      if (!redacted[k]) return false;
    }
  }
  return found;
}

absl::StatusOr<CompatReport> ScoreCompatCases(const RulesConfig& config,
                                              const std::vector<CompatCase>& cases,
                                              bool own_rule_only) {
  CompatReport report;
  ASSIGN_OR_RETURN(std::unique_ptr<RuleScrubber> whole, RuleScrubber::Create(config));
  for (const auto& p : whole->problems()) {
    report.problems.push_back(absl::StrCat(p.rule_id, ": ", p.reason));
  }
  std::unordered_map<std::string, std::unique_ptr<RuleScrubber>> alone;
  auto own = [&](const std::string& rule_id) -> const RuleScrubber* {
    auto it = alone.find(rule_id);
    if (it != alone.end()) return it->second.get();
    RulesConfig one;
    one.allowlists = config.allowlists;
    for (const RuleSpec& r : config.rules) {
      if (r.id == rule_id) one.rules.push_back(r);
    }
    std::unique_ptr<RuleScrubber> s;
    if (!one.rules.empty()) {
      auto built = RuleScrubber::Create(one);
      if (built.ok()) s = *std::move(built);
    }
    return alone.emplace(rule_id, std::move(s)).first->second.get();
  };
  for (const CompatCase& c : cases) {
    CompatRuleScore& score = report.per_rule[c.rule_id];
    const RuleScrubber* s = whole.get();
    if ((c.expect_secret && own_rule_only) || (!c.expect_secret && !c.other_rules.empty())) {
      if (const RuleScrubber* o = own(c.rule_id)) s = o;
    }
    const std::string out = s->Scrub(c.text);
    if (c.expect_secret) {
      ++score.secret_cases;
      if (SecretRedacted(c.text, c.secret, out)) {
        ++score.secret_redacted;
      } else {
        report.missed.push_back(c.id);
      }
    } else {
      ++score.clean_cases;
      if (out != c.text) {
        ++score.clean_changed;
        report.changed.push_back(c.id);
      }
    }
  }
  for (const auto& [id, s] : report.per_rule) {
    report.total.secret_cases += s.secret_cases;
    report.total.secret_redacted += s.secret_redacted;
    report.total.clean_cases += s.clean_cases;
    report.total.clean_changed += s.clean_changed;
  }
  return report;
}

}  // namespace contextd::scrub
