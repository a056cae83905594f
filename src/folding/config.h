// FoldingConfig: the `context_folding:` settings of the engine with their defaults, a validator
// that names the offending key, and the parser of rate-limit strings ("5/minute"). The server
// fills the struct from YAML, environment and flags. Plain values; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::folding {

// A rate: at most `count` events per `window`.
struct RateLimit {
  int64_t count = 0;
  std::chrono::seconds window{0};
};

// Parses "N/second", "N/minute" or "N/hour" (N >= 1; also the plural unit names). Returns
// InvalidArgument quoting `text` and naming `key` (used in the message) if it is malformed.
absl::StatusOr<RateLimit> ParseRateLimit(std::string_view text,
                                         std::string_view key = "branch_creation_rate_limit");

// The engine's settings; field names are the YAML keys under `context_folding:`.
struct FoldingConfig {
  int64_t default_budget = 8192;
  int64_t max_budget = 32768;
  int max_depth = 3;
  int64_t default_timeout_seconds = 300;
  int64_t max_timeout_seconds = 600;
  // Memory injection at branch_create (the seed's defaults): memories fill at most this share of
  // the branch's budget, only those at or above memory_min_confidence, at most memory_max_items.
  double injection_budget_ratio = 0.2;
  double memory_min_confidence = 0.7;
  int memory_max_items = 10;
  int max_concurrent_branches_per_session = 10;
  int max_concurrent_branches_per_instance = 100;
  std::string branch_creation_rate_limit = "5/minute";
  int64_t session_idle_timeout_seconds = 1800;
  // What the model gateway sends the model while a branch is open (model/branch_view.h):
  // "isolated" (the conversation's opening, the branch's opening turn and its own turns) or
  // "inherited" (the parent's whole history too). branch_view_keep_opening: off, the isolated
  // view leaves out the conversation's opening as well (the seed's strict FR-002).
  std::string branch_view = "isolated";
  bool branch_view_keep_opening = true;

  // OK if every value is in range; otherwise InvalidArgument whose message starts with the full
  // key, e.g. "context_folding.max_budget: must be >= default_budget (8192), got 100".
  absl::Status Validate() const;
};

}  // namespace contextd::folding
