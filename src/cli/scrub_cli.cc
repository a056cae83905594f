#include "cli/scrub_cli.h"

#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/foreign_text.h"
#include "scrub/rule_scrubber.h"

namespace contextd::cli {

int RunScrubCommand(const std::string& rules_file, bool with_defaults, bool report_json,
                    std::istream& in, std::ostream& out, std::ostream& err) {
  scrub::ScrubConfig config;
  config.rules_file = rules_file;
  config.extend_default = with_defaults;
  auto scrubber = scrub::BuildScrubber(config);
  if (!scrubber.ok()) {
    err << "contextd scrub: " << scrubber.status().message() << "\n";
    return 2;
  }
  for (const auto& p : (*scrubber)->problems()) {
    err << "contextd scrub: warning: rule " << p.rule_id << ": " << p.reason << "\n";
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  scrub::RuleScrubber::Result r = (*scrubber)->ScrubWithFindings(text);
  if (!report_json) {
    out << r.text;
    out.flush();
    return 0;
  }
  nlohmann::json findings = nlohmann::json::array();
  size_t redacted = 0, covered_to = 0;
  for (const scrub::Finding& f : r.findings) {
    findings.push_back({{"rule_id", f.rule_id},
                        {"start", f.start},
                        {"end", f.end},
                        {"line", f.line},
                        {"entropy", f.entropy},
                        {"tags", f.tags}});
    size_t s = std::max(f.start, covered_to);
    if (f.end > s) redacted += f.end - s;
    covered_to = std::max(covered_to, f.end);
  }
  nlohmann::json doc = {{"findings", findings}, {"redacted_bytes", redacted}};
  // Never let invalid UTF-8 in rule ids throw: replace it.
  out << base::DumpJson(doc, 2) << "\n";
  return 0;
}

}  // namespace contextd::cli
