// Fuzz target: scrubbing arbitrary bytes with the default rules never crashes, is idempotent, and
// the output is no longer than the input plus the markers it contains. With SCRUB_FUZZ_RULES=FILE
// it fuzzes with that gitleaks rules file alone (e.g. gitleaks' own config) instead.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scrub/rule_scrubber.h"

namespace {

const contextd::scrub::RuleScrubber& Scrubber() {
  static const auto s = [] {
    contextd::scrub::ScrubConfig config;
    if (const char* rules = std::getenv("SCRUB_FUZZ_RULES")) {
      config.rules_file = rules;
      config.extend_default = false;
    }
    auto b = contextd::scrub::BuildScrubber(config);
    if (!b.ok()) std::abort();
    return *b;
  }();
  return *s;
}

size_t MarkerBytes(std::string_view text) {
  size_t total = 0;
  for (size_t pos = text.find("[REDACTED:"); pos != std::string_view::npos;
       pos = text.find("[REDACTED:", pos + 1)) {
    size_t len = 0;
    if (contextd::scrub::ParseMarker(text, pos, &len)) total += len;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string once = Scrubber().Scrub(in);
  std::string twice = Scrubber().Scrub(once);
  if (once != twice) std::abort();
  if (once.size() > in.size() + MarkerBytes(once)) std::abort();
  auto found = Scrubber().Scan(in);
  for (const auto& f : found) {
    if (f.start >= f.end || f.end > in.size() || f.match_start > f.start || f.match_end < f.end) {
      std::abort();
    }
  }
  if (found.empty() && once != in) std::abort();
  return 0;
}
