// Fuzz target: the gitleaks TOML loader and rule compiler accept or reject any input without
// crashing; whatever compiles can scrub its own config text idempotently.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scrub/rule_scrubber.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto cfg = contextd::scrub::ParseRulesToml(in, "fuzz.toml");
  if (!cfg.ok()) {
    if (cfg.status().message().empty()) std::abort();
    return 0;
  }
  auto s = contextd::scrub::RuleScrubber::Create(*cfg);
  if (!s.ok()) return 0;
  std::string once = (*s)->Scrub(in);
  if ((*s)->Scrub(once) != once) std::abort();
  return 0;
}
