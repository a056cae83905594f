// Metrics: the Prometheus registry of the server and the text exposition served at GET /metrics.
// Branch metrics are fed from the folding event bus; tool-call latency from the tool layer.
// Thread-safe (prometheus-cpp metrics are atomic; Render may run on any thread).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/retention.h"
#include "tools/tool_metrics.h"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace contextd::server {

class Metrics final : public tools::ToolMetrics {
 public:
  Metrics();
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A branch was created (active count +1).
  void BranchCreated() override;
  // A branch reached the final `status` (completed, timeout, budget_exhausted, failed) having used
  // `used` of `allocated` tokens (active count -1).
  void BranchFinished(std::string_view status, double used, double allocated) override;
  // `tokens` were charged to a branch or session root.
  void TokensCharged(double tokens) override;
  // A tool call of `tool` took `seconds` inside contextd.
  void ToolCallLatency(std::string_view tool, double seconds) override;
  // Sets the active-branch gauge (after restart recovery).
  void SetActiveBranches(double n);
  // A group commit ended (`ok` or failed) after `seconds`, releasing `held` outbound messages.
  void GroupCommitted(bool ok, double seconds, double held);

  // Distinct (tenant, project) pairs the model usage counters label; later projects are counted
  // under project="_other" (tenants are bounded by the token file).
  static constexpr size_t kMaxProjectLabels = 256;

  // The model gateway forwarded (or failed to forward) one request of `api` for `tenant` and
  // `project` (labels of contextd_model_requests_total and contextd_model_provider_tokens_total):
  // its relayed HTTP
  // status ("0" when none), `outcome`, contextd's token counts before and after F(.), the folds
  // it applied and decided, the folds it could not make (by reason), new redactions, and the
  // provider's usage.
  struct ModelRequest {
    std::string api;
    std::string tenant = "local";
    std::string project = "default";
    int status = 0;
    std::string outcome;
    double tokens_before = 0, tokens_after = 0;
    double folds_applied = 0, folds_new = 0, redactions_new = 0;
    std::vector<std::string> skipped;
    double input = 0, cache_read = 0, cache_creation = 0, output = 0;
    double seconds = 0;
    double at_unix_seconds = 0;
    bool fallback = false;
    std::string auto_fold_outcome;  // "" when auto-fold was off for the request
    double auto_folds_new = 0, auto_fold_tokens = 0;
    double thinking_removed = 0, thinking_removed_tokens = 0;  // by the auto-fold step
    double lessons = 0, lessons_tokens = 0;  // memory items given at a task's start (0038)
    std::string view;  // the open branch's view (isolated, inherited); "" when none was open
    double view_tokens_spared = 0;
    std::string unfoldable;  // why F(.) could not apply ("previous_response_id", ...), or ""
  };
  void ModelRequestDone(const ModelRequest& request);

  // The ReasoningBank reported `type` (memory.recorded, memory.injected, ...) for `items` items;
  // for memory.injected, `tokens` were injected. Thread-safe, as every method here.
  void MemoryEvent(std::string_view type, double items, double tokens);
  // Retrieval for one branch_create took `seconds`; `ok` false if it failed (no memories then).
  void MemoryRetrieval(bool ok, double seconds) override;
  // A memory endpoint (`part`: distiller, embeddings) failed and the bank fell back.
  void MemoryFallback(std::string_view part);
  // NATS events (docs/events.md): EventsEnabled creates the counters at zero (a server without
  // events.nats.url shows none); an event was handed to NATS (JetStream: acked); one was dropped
  // for `reason` (queue_full, disconnected, publish_error, retries_exhausted, shutdown); a
  // JetStream retry was acked as a duplicate.
  void EventsEnabled();
  void EventPublished();
  void EventDropped(std::string_view reason, int64_t n = 1);
  void EventDuplicate();
  // The transactional outbox (decision 0027): its rows (every instance's) and the age of the
  // oldest, reported after each sweep; `n` rows another instance left were taken over.
  void EventOutboxDepth(int64_t rows, double oldest_age_seconds);
  void EventsTakenOver(int64_t n);

  // The places whose contextd_internal_errors_total{where} counters show from the start (at 0);
  // another place reported to base::ReportInternalError shows from its first error.
  static constexpr const char* kInternalErrorPlaces[] = {
      "executor",     "http",         "model_worker",   "memory_worker",  "upstream",
      "search_index", "outbox_relay", "nats_publisher", "wal_checkpoint", "stdio"};

  // The retention sweep (decision 0031): one ended (what it removed, its duration and longest
  // batch, or skipped because another instance sweeps), failed, or counted what is kept.
  void RetentionSwept(const store::RetentionReport& report);
  void RetentionFailed();
  void RetentionKept(const store::RetentionKept& kept);

  // The Prometheus text exposition format (version 0.0.4), with
  // contextd_internal_errors_total{where} read from base/internal_errors.h.
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* internal_errors_;
  mutable std::mutex internal_errors_mu_;
  prometheus::Family<prometheus::Counter>* finished_;
  prometheus::Gauge* active_;
  prometheus::Counter* tokens_;
  prometheus::Histogram* utilisation_;
  prometheus::Family<prometheus::Histogram>* tool_latency_;
  prometheus::Family<prometheus::Counter>* commits_;
  prometheus::Histogram* commit_seconds_;
  prometheus::Histogram* commit_held_;
  prometheus::Family<prometheus::Counter>* model_requests_;
  prometheus::Family<prometheus::Gauge>* model_last_;
  prometheus::Family<prometheus::Counter>* model_tokens_;
  prometheus::Family<prometheus::Counter>* model_provider_tokens_;
  prometheus::Family<prometheus::Counter>* model_folds_;
  prometheus::Family<prometheus::Counter>* model_folds_skipped_;
  prometheus::Family<prometheus::Counter>* model_branch_views_;
  prometheus::Family<prometheus::Counter>* model_view_tokens_spared_;
  prometheus::Family<prometheus::Counter>* model_auto_folds_;
  prometheus::Family<prometheus::Counter>* model_auto_fold_tokens_;
  prometheus::Family<prometheus::Counter>* model_auto_fold_steps_;
  prometheus::Family<prometheus::Counter>* model_auto_fold_thinking_;
  prometheus::Family<prometheus::Counter>* model_auto_fold_thinking_tokens_;
  prometheus::Family<prometheus::Counter>* model_lessons_;
  prometheus::Family<prometheus::Counter>* model_lessons_tokens_;
  prometheus::Family<prometheus::Counter>* model_redactions_;
  prometheus::Family<prometheus::Counter>* model_fallbacks_;
  prometheus::Family<prometheus::Counter>* model_unfoldable_;
  prometheus::Family<prometheus::Histogram>* model_seconds_;
  prometheus::Family<prometheus::Counter>* memory_events_;
  prometheus::Family<prometheus::Counter>* memory_items_;
  prometheus::Counter* memory_injected_tokens_;
  prometheus::Family<prometheus::Histogram>* memory_retrieval_seconds_;
  // The (tenant, project) label pairs the model usage counters hold so far (bounded: see
  // ProjectLabel).
  std::mutex labels_mu_;
  std::set<std::pair<std::string, std::string>> project_labels_;
  std::string ProjectLabel(const std::string& tenant, const std::string& project);
  prometheus::Family<prometheus::Counter>* memory_fallbacks_;
  prometheus::Family<prometheus::Counter>* events_published_ = nullptr;
  prometheus::Family<prometheus::Counter>* events_dropped_ = nullptr;
  prometheus::Family<prometheus::Counter>* events_duplicates_ = nullptr;
  prometheus::Family<prometheus::Gauge>* events_outbox_rows_ = nullptr;
  prometheus::Family<prometheus::Gauge>* events_outbox_age_ = nullptr;
  prometheus::Family<prometheus::Counter>* events_taken_over_ = nullptr;
  prometheus::Family<prometheus::Counter>* retention_rows_ = nullptr;
  prometheus::Family<prometheus::Counter>* retention_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* retention_kept_rows_ = nullptr;
  prometheus::Family<prometheus::Gauge>* retention_kept_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* retention_sweeps_ = nullptr;
  prometheus::Gauge* retention_last_seconds_ = nullptr;
  prometheus::Gauge* retention_batch_max_seconds_ = nullptr;
  void BuildRetentionMetrics();
};

}  // namespace contextd::server
