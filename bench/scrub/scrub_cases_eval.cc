// scrub_cases_eval: recall and false-positive rate of a rules config on labelled examples in the
// format of ../shared/compat/gitleaks/cases.jsonl (gitleaks' own per-rule examples; scoring as in
// scrub/compat_cases.h): a secret case counts when every byte of its secret was redacted, a
// clean case is a false positive when its text changed.
// Usage: scrub_cases_eval CASES.jsonl RULES.toml [--with-defaults] [--own-rule] [--json OUT]
//   RULES.toml is read as `contextd scrub --rules` reads it (alone unless it extends the
//   built-in rules); --with-defaults adds the built-in rules; --own-rule scrubs each secret
//   case with its own rule alone (as gitleaks tests its examples).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "scrub/compat_cases.h"
#include "scrub/rule_scrubber.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: scrub_cases_eval CASES.jsonl RULES.toml [--with-defaults] [--own-rule] "
                 "[--json OUT]\n";
    return 2;
  }
  contextd::scrub::ScrubConfig config;
  config.rules_file = argv[2];
  config.extend_default = false;
  bool own_rule = false;
  std::string json_out;
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--with-defaults") {
      config.extend_default = true;
    } else if (flag == "--own-rule") {
      own_rule = true;
    } else if (flag == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else {
      std::cerr << "unknown argument " << flag << "\n";
      return 2;
    }
  }
  auto rules = contextd::scrub::ResolveRules(config);
  if (!rules.ok()) {
    std::cerr << rules.status() << "\n";
    return 2;
  }
  auto cases = contextd::scrub::LoadCompatCases(argv[1]);
  if (!cases.ok()) {
    std::cerr << cases.status() << "\n";
    return 2;
  }
  auto report = contextd::scrub::ScoreCompatCases(*rules, *cases, own_rule);
  if (!report.ok()) {
    std::cerr << report.status() << "\n";
    return 2;
  }
  const auto& t = report->total;
  auto pct = [](size_t a, size_t b) { return b == 0 ? 0.0 : 100.0 * a / b; };
  std::printf("%zu cases over %zu rules, %s%s%s:\n", cases->size(), report->per_rule.size(),
              argv[2], config.extend_default ? " + built-in rules" : " alone",
              own_rule ? ", secret cases with their own rule alone" : "");
  std::printf("  recall          %zu/%zu = %.2f%% (secret cases with every byte redacted)\n",
              t.secret_redacted, t.secret_cases, pct(t.secret_redacted, t.secret_cases));
  std::printf("  false positives %zu/%zu = %.2f%% (clean cases changed)\n", t.clean_changed,
              t.clean_cases, pct(t.clean_changed, t.clean_cases));
  for (const auto& p : report->problems) std::printf("  not active: %s\n", p.c_str());
  std::printf("  rules with a miss or a false positive:\n");
  nlohmann::json per_rule = nlohmann::json::object();
  for (const auto& [id, s] : report->per_rule) {
    per_rule[id] = {{"secret_cases", s.secret_cases},
                    {"secret_redacted", s.secret_redacted},
                    {"clean_cases", s.clean_cases},
                    {"clean_changed", s.clean_changed}};
    if (s.secret_redacted == s.secret_cases && s.clean_changed == 0) continue;
    std::printf("    %-40s redacted %zu/%zu, clean changed %zu/%zu\n", id.c_str(),
                s.secret_redacted, s.secret_cases, s.clean_changed, s.clean_cases);
  }
  if (!json_out.empty()) {
    nlohmann::json doc = {{"rules_file", config.rules_file},
                          {"with_defaults", config.extend_default},
                          {"own_rule", own_rule},
                          {"secret_cases", t.secret_cases},
                          {"secret_redacted", t.secret_redacted},
                          {"clean_cases", t.clean_cases},
                          {"clean_changed", t.clean_changed},
                          {"missed", report->missed},
                          {"changed", report->changed},
                          {"per_rule", per_rule}};
    std::ofstream(json_out) << doc.dump(1) << "\n";
  }
  return 0;
}
