#include "folding/config.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "folding/internal/sv.h"

namespace contextd::folding {

using internal::Sv;

absl::StatusOr<RateLimit> ParseRateLimit(std::string_view text, std::string_view key) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("context_folding.", Sv(key), ": invalid rate \"", Sv(text),
                     "\": expected N/second, N/minute or N/hour with N >= 1"));
  };
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  std::string_view num = text.substr(0, slash);
  std::string_view unit = text.substr(slash + 1);
  int64_t n = 0;
  if (num.empty() || !absl::SimpleAtoi(Sv(num), &n) || n < 1) return bad();
  for (char c : num) {
    if (c < '0' || c > '9') return bad();
  }
  RateLimit r;
  r.count = n;
  if (unit == "second" || unit == "seconds" || unit == "s") {
    r.window = std::chrono::seconds(1);
  } else if (unit == "minute" || unit == "minutes" || unit == "m") {
    r.window = std::chrono::seconds(60);
  } else if (unit == "hour" || unit == "hours" || unit == "h") {
    r.window = std::chrono::seconds(3600);
  } else {
    return bad();
  }
  return r;
}

absl::Status FoldingConfig::Validate() const {
  auto err = [](std::string_view key, std::string_view what, auto got) {
    return absl::InvalidArgumentError(
        absl::StrCat("context_folding.", Sv(key), ": ", Sv(what), ", got ", got));
  };
  if (max_budget < 1) return err("max_budget", "must be >= 1", max_budget);
  if (default_budget < 1) return err("default_budget", "must be >= 1", default_budget);
  if (default_budget > max_budget) {
    return err("default_budget", absl::StrCat("must be <= max_budget (", max_budget, ")"),
               default_budget);
  }
  if (max_depth < 1) return err("max_depth", "must be >= 1", max_depth);
  if (max_depth > 64) return err("max_depth", "must be <= 64", max_depth);
  if (max_timeout_seconds < 1)
    return err("max_timeout_seconds", "must be >= 1", max_timeout_seconds);
  if (default_timeout_seconds < 1) {
    return err("default_timeout_seconds", "must be >= 1", default_timeout_seconds);
  }
  if (default_timeout_seconds > max_timeout_seconds) {
    return err("default_timeout_seconds",
               absl::StrCat("must be <= max_timeout_seconds (", max_timeout_seconds, ")"),
               default_timeout_seconds);
  }
  if (!(injection_budget_ratio >= 0.0 && injection_budget_ratio <= 1.0)) {
    return err("injection_budget_ratio", "must be between 0 and 1", injection_budget_ratio);
  }
  if (!(memory_min_confidence >= 0.0 && memory_min_confidence <= 1.0)) {
    return err("memory_min_confidence", "must be between 0 and 1", memory_min_confidence);
  }
  if (memory_max_items < 0) return err("memory_max_items", "must be >= 0", memory_max_items);
  if (branch_view != "isolated" && branch_view != "inherited") {
    return err("branch_view", "must be \"isolated\" or \"inherited\"",
               absl::StrCat("\"", branch_view, "\""));
  }
  if (max_concurrent_branches_per_session < 1) {
    return err("max_concurrent_branches_per_session", "must be >= 1",
               max_concurrent_branches_per_session);
  }
  if (max_concurrent_branches_per_instance < 1) {
    return err("max_concurrent_branches_per_instance", "must be >= 1",
               max_concurrent_branches_per_instance);
  }
  if (max_concurrent_branches_per_session > max_concurrent_branches_per_instance) {
    return err("max_concurrent_branches_per_session",
               absl::StrCat("must be <= max_concurrent_branches_per_instance (",
                            max_concurrent_branches_per_instance, ")"),
               max_concurrent_branches_per_session);
  }
  auto rate = ParseRateLimit(branch_creation_rate_limit);
  if (!rate.ok()) return rate.status();
  if (session_idle_timeout_seconds < 1) {
    return err("session_idle_timeout_seconds", "must be >= 1", session_idle_timeout_seconds);
  }
  return absl::OkStatus();
}

}  // namespace contextd::folding
