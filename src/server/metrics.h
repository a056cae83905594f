// Metrics: the Prometheus registry of the server and the text exposition served at GET /metrics.
// Branch metrics are fed from the folding event bus; tool-call latency from the tool layer.
// Thread-safe (prometheus-cpp metrics are atomic; Render may run on any thread).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace contextd::server {

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A branch was created (active count +1).
  void BranchCreated();
  // A branch reached the final `status` (completed, timeout, budget_exhausted, failed) having used
  // `used` of `allocated` tokens (active count -1).
  void BranchFinished(std::string_view status, double used, double allocated);
  // `tokens` were charged to a branch or session root.
  void TokensCharged(double tokens);
  // A tool call of `tool` took `seconds` inside contextd.
  void ToolCallLatency(std::string_view tool, double seconds);
  // Sets the active-branch gauge (after restart recovery).
  void SetActiveBranches(double n);
  // A group commit ended (`ok` or failed) after `seconds`, releasing `held` outbound messages.
  void GroupCommitted(bool ok, double seconds, double held);

  // The Prometheus text exposition format (version 0.0.4).
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* finished_;
  prometheus::Gauge* active_;
  prometheus::Counter* tokens_;
  prometheus::Histogram* utilisation_;
  prometheus::Family<prometheus::Histogram>* tool_latency_;
  prometheus::Family<prometheus::Counter>* commits_;
  prometheus::Histogram* commit_seconds_;
  prometheus::Histogram* commit_held_;
};

}  // namespace contextd::server
