// ToolMetrics: what the contextd tools report to the server's metrics (branches created and
// finished, tokens charged, tool latency, memory retrieval). server::Metrics implements it, so
// the tools need not know the Prometheus registry. Implementations must be thread-safe.
#pragma once

#include <string_view>

namespace contextd::tools {

class ToolMetrics {
 public:
  virtual ~ToolMetrics() = default;
  // A tool call of `tool` took `seconds` inside contextd.
  virtual void ToolCallLatency(std::string_view tool, double seconds) = 0;
  // A branch was created.
  virtual void BranchCreated() = 0;
  // A branch reached the final `status` (completed, timeout, budget_exhausted, failed) having used
  // `used` of `allocated` tokens.
  virtual void BranchFinished(std::string_view status, double used, double allocated) = 0;
  // `tokens` were charged to a branch or session root.
  virtual void TokensCharged(double tokens) = 0;
  // Retrieval for one branch_create took `seconds`; `ok` false if it failed (no memories then).
  virtual void MemoryRetrieval(bool ok, double seconds) = 0;
};

}  // namespace contextd::tools
