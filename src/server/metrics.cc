#include "server/metrics.h"

#include "base/internal_errors.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace contextd::server {

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  internal_errors_ = &prometheus::BuildCounter()
                          .Name("contextd_internal_errors_total")
                          .Help(
                              "Exceptions caught where they would have ended the process (a "
                              "task, a route handler, a worker thread's loop), by where")
                          .Register(*registry_);
  for (const char* where : kInternalErrorPlaces) base::RegisterInternalErrorPlace(where);
  BuildRetentionMetrics();
  finished_ = &prometheus::BuildCounter()
                   .Name("contextd_branches_finished_total")
                   .Help("Branches that reached a final status, by status")
                   .Register(*registry_);
  active_ = &prometheus::BuildGauge()
                 .Name("contextd_branches_active")
                 .Help("Branches currently active")
                 .Register(*registry_)
                 .Add({});
  tokens_ = &prometheus::BuildCounter()
                 .Name("contextd_tokens_charged_total")
                 .Help("Tokens charged to branches and session roots")
                 .Register(*registry_)
                 .Add({});
  utilisation_ =
      &prometheus::BuildHistogram()
           .Name("contextd_branch_budget_utilisation_ratio")
           .Help("Tokens used over tokens allocated, at the end of each branch")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 0.75, 0.8, 0.9, 1.0});
  tool_latency_ = &prometheus::BuildHistogram()
                       .Name("contextd_tool_call_seconds")
                       .Help("Time spent inside contextd per tool call, by tool")
                       .Register(*registry_);
  commits_ = &prometheus::BuildCounter()
                  .Name("contextd_store_group_commits_total")
                  .Help("SQLite group commits, by outcome (ok, failed)")
                  .Register(*registry_);
  commit_seconds_ =
      &prometheus::BuildHistogram()
           .Name("contextd_store_group_commit_seconds")
           .Help("Time to commit one group of writes")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                            0.0025, 0.005, 0.01, 0.05, 0.25});
  commit_held_ =
      &prometheus::BuildHistogram()
           .Name("contextd_store_group_commit_held_messages")
           .Help("Outbound messages released by one group commit")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128});
  memory_events_ = &prometheus::BuildCounter()
                        .Name("contextd_memory_events_total")
                        .Help(
                            "ReasoningBank events (memory.recorded, memory.injected, "
                            "memory.extracted, memory.feedback, ...), by type")
                        .Register(*registry_);
  memory_items_ = &prometheus::BuildCounter()
                       .Name("contextd_memory_event_items_total")
                       .Help("Memories those events concerned, by type")
                       .Register(*registry_);
  memory_injected_tokens_ = &prometheus::BuildCounter()
                                 .Name("contextd_memory_injected_tokens_total")
                                 .Help("Tokens of memories injected into new branches")
                                 .Register(*registry_)
                                 .Add({});
  memory_retrieval_seconds_ = &prometheus::BuildHistogram()
                                   .Name("contextd_memory_retrieval_seconds")
                                   .Help("Memory retrieval per branch_create, by outcome")
                                   .Register(*registry_);
  memory_fallbacks_ = &prometheus::BuildCounter()
                           .Name("contextd_memory_fallbacks_total")
                           .Help(
                               "Memory endpoint failures the bank fell back from, by part "
                               "(distiller, embeddings)")
                           .Register(*registry_);
  model_requests_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_requests_total")
           .Help("Model requests through the gateway, by api, relayed status, tenant and project")
           .Register(*registry_);
  model_last_ = &prometheus::BuildGauge()
                     .Name("contextd_model_last_request_timestamp_seconds")
                     .Help("Unix time of the last model request, by api")
                     .Register(*registry_);
  model_tokens_ = &prometheus::BuildCounter()
                       .Name("contextd_model_tokens_total")
                       .Help(
                           "Message tokens as the client sent them (stage=client) and as "
                           "forwarded after folding (stage=forwarded), by contextd's count")
                       .Register(*registry_);
  model_provider_tokens_ = &prometheus::BuildCounter()
                                .Name("contextd_model_provider_tokens_total")
                                .Help(
                                    "Tokens the provider reported, by kind (input, cache_read, "
                                    "cache_creation, output), tenant and project")
                                .Register(*registry_);
  model_folds_ = &prometheus::BuildCounter()
                      .Name("contextd_model_folds_total")
                      .Help("Branch folds decided by the model gateway")
                      .Register(*registry_);
  model_folds_skipped_ = &prometheus::BuildCounter()
                              .Name("contextd_model_folds_skipped_total")
                              .Help("Branches left whole in a request, by reason")
                              .Register(*registry_);
  model_redactions_ = &prometheus::BuildCounter()
                           .Name("contextd_model_redacted_blocks_total")
                           .Help("Content blocks redacted by the model gateway (first time)")
                           .Register(*registry_);
  model_auto_folds_ = &prometheus::BuildCounter()
                           .Name("contextd_model_auto_folds_total")
                           .Help("Tool results auto-folded into trail handles (first time)")
                           .Register(*registry_);
  model_auto_fold_tokens_ = &prometheus::BuildCounter()
                                 .Name("contextd_model_auto_fold_tokens_total")
                                 .Help("Tokens of the tool results auto-folded (first time)")
                                 .Register(*registry_);
  model_auto_fold_steps_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_auto_fold_steps_total")
           .Help(
               "Requests with auto-fold on, by what their step did (folded, below_trigger, "
               "below_clear_at_least, below_payback, thinking, tool_loop, no_trail)")
           .Register(*registry_);
  model_auto_fold_thinking_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_auto_fold_thinking_removed_total")
           .Help("Thinking blocks (reasoning items) auto-fold steps removed after their fold point")
           .Register(*registry_);
  model_auto_fold_thinking_tokens_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_auto_fold_thinking_removed_tokens_total")
           .Help("Tokens of the thinking blocks auto-fold steps removed")
           .Register(*registry_);
  model_lessons_ = &prometheus::BuildCounter()
                        .Name("contextd_model_lessons_injected_total")
                        .Help("Memory items given at the start of a task (decision 0038)")
                        .Register(*registry_);
  model_lessons_tokens_ = &prometheus::BuildCounter()
                               .Name("contextd_model_lessons_tokens_total")
                               .Help("Tokens of the lessons given at the start of a task")
                               .Register(*registry_);
  model_branch_views_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_branch_view_requests_total")
           .Help(
               "Requests sent while a branch was open, by the view the model got (isolated, "
               "inherited)")
           .Register(*registry_);
  model_view_tokens_spared_ =
      &prometheus::BuildCounter()
           .Name("contextd_model_branch_view_tokens_spared_total")
           .Help(
               "Tokens the isolated branch view left out of requests (the parent's history, "
               "less the branch's opening turn)")
           .Register(*registry_);
  model_fallbacks_ = &prometheus::BuildCounter()
                          .Name("contextd_model_rewrite_fallbacks_total")
                          .Help("Requests forwarded unchanged because a rewrite was not valid")
                          .Register(*registry_);
  model_unfoldable_ = &prometheus::BuildCounter()
                           .Name("contextd_model_unfoldable_requests_total")
                           .Help(
                               "Requests of a folded API forwarded as sent because their history "
                               "is kept by the provider, by api and reason")
                           .Register(*registry_);
  model_seconds_ = &prometheus::BuildHistogram()
                        .Name("contextd_model_request_seconds")
                        .Help("Model requests from arrival to the end of the answer, by api")
                        .Register(*registry_);
}

Metrics::~Metrics() = default;

std::string Metrics::ProjectLabel(const std::string& tenant, const std::string& project) {
  std::lock_guard<std::mutex> lock(labels_mu_);
  auto key = std::make_pair(tenant, project);
  if (project_labels_.count(key) > 0) return project;
  if (project_labels_.size() >= kMaxProjectLabels) return "_other";
  project_labels_.insert(std::move(key));
  return project;
}

void Metrics::ModelRequestDone(const ModelRequest& r) {
  const std::string project = ProjectLabel(r.tenant, r.project);
  model_requests_
      ->Add({{"api", r.api},
             {"status", std::to_string(r.status)},
             {"tenant", r.tenant},
             {"project", project}})
      .Increment();
  model_last_->Add({{"api", r.api}}).Set(r.at_unix_seconds);
  model_tokens_->Add({{"api", r.api}, {"stage", "client"}}).Increment(r.tokens_before);
  model_tokens_->Add({{"api", r.api}, {"stage", "forwarded"}}).Increment(r.tokens_after);
  auto provider_tokens = [&](const char* kind, double n) {
    model_provider_tokens_
        ->Add({{"api", r.api}, {"kind", kind}, {"tenant", r.tenant}, {"project", project}})
        .Increment(n);
  };
  provider_tokens("input", r.input);
  provider_tokens("cache_read", r.cache_read);
  provider_tokens("cache_creation", r.cache_creation);
  provider_tokens("output", r.output);
  model_folds_->Add({{"api", r.api}}).Increment(r.folds_new);
  for (const std::string& reason : r.skipped) {
    model_folds_skipped_->Add({{"api", r.api}, {"reason", reason}}).Increment();
  }
  model_redactions_->Add({{"api", r.api}}).Increment(r.redactions_new);
  if (r.fallback) model_fallbacks_->Add({{"api", r.api}}).Increment();
  if (!r.auto_fold_outcome.empty()) {
    model_auto_fold_steps_->Add({{"api", r.api}, {"outcome", r.auto_fold_outcome}}).Increment();
    model_auto_folds_->Add({{"api", r.api}}).Increment(r.auto_folds_new);
    model_auto_fold_tokens_->Add({{"api", r.api}}).Increment(r.auto_fold_tokens);
    model_auto_fold_thinking_->Add({{"api", r.api}}).Increment(r.thinking_removed);
    model_auto_fold_thinking_tokens_->Add({{"api", r.api}}).Increment(r.thinking_removed_tokens);
  }
  if (r.lessons > 0) {
    model_lessons_->Add({{"api", r.api}}).Increment(r.lessons);
    model_lessons_tokens_->Add({{"api", r.api}}).Increment(r.lessons_tokens);
  }
  if (!r.view.empty()) {
    model_branch_views_->Add({{"api", r.api}, {"view", r.view}}).Increment();
    model_view_tokens_spared_->Add({{"api", r.api}}).Increment(r.view_tokens_spared);
  }
  if (!r.unfoldable.empty()) {
    model_unfoldable_->Add({{"api", r.api}, {"reason", r.unfoldable}}).Increment();
  }
  model_seconds_
      ->Add({{"api", r.api}},
            prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600})
      .Observe(r.seconds);
}

void Metrics::BranchCreated() { active_->Increment(); }

void Metrics::BranchFinished(std::string_view status, double used, double allocated) {
  finished_->Add({{"status", std::string(status)}}).Increment();
  active_->Decrement();
  if (allocated > 0) utilisation_->Observe(used / allocated);
}

void Metrics::TokensCharged(double tokens) { tokens_->Increment(tokens); }

void Metrics::ToolCallLatency(std::string_view tool, double seconds) {
  tool_latency_
      ->Add({{"tool", std::string(tool)}},
            prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                    0.01, 0.05, 0.1, 0.5, 1, 5})
      .Observe(seconds);
}

void Metrics::SetActiveBranches(double n) { active_->Set(n); }

void Metrics::GroupCommitted(bool ok, double seconds, double held) {
  commits_->Add({{"outcome", ok ? "ok" : "failed"}}).Increment();
  commit_seconds_->Observe(seconds);
  commit_held_->Observe(held);
}

std::string Metrics::Render() const {
  {
    // base counts them process-wide (it cannot see this registry); bring the counters level.
    std::lock_guard<std::mutex> lock(internal_errors_mu_);
    for (const auto& [where, n] : base::InternalErrorCounts()) {
      prometheus::Counter& c = internal_errors_->Add({{"where", where}});
      if (static_cast<double>(n) > c.Value()) c.Increment(static_cast<double>(n) - c.Value());
    }
  }
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

void Metrics::MemoryEvent(std::string_view type, double items, double tokens) {
  memory_events_->Add({{"type", std::string(type)}}).Increment();
  memory_items_->Add({{"type", std::string(type)}}).Increment(items);
  if (tokens > 0) memory_injected_tokens_->Increment(tokens);
}

void Metrics::MemoryRetrieval(bool ok, double seconds) {
  memory_retrieval_seconds_
      ->Add({{"outcome", ok ? "ok" : "failed"}},
            prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                    0.1, 0.5})
      .Observe(seconds);
}

void Metrics::MemoryFallback(std::string_view part) {
  memory_fallbacks_->Add({{"part", std::string(part)}}).Increment();
}

void Metrics::EventsEnabled() {
  if (events_published_ != nullptr) return;
  events_published_ = &prometheus::BuildCounter()
                           .Name("contextd_events_published_total")
                           .Help("Events handed to NATS (JetStream: stored and acked)")
                           .Register(*registry_);
  events_dropped_ = &prometheus::BuildCounter()
                         .Name("contextd_events_dropped_total")
                         .Help(
                             "Events not delivered to NATS, by reason (queue_full, "
                             "disconnected, publish_error, retries_exhausted, shutdown, "
                             "outbox_trimmed, outbox_error)")
                         .Register(*registry_);
  events_duplicates_ = &prometheus::BuildCounter()
                            .Name("contextd_events_jetstream_duplicates_total")
                            .Help(
                                "JetStream publishes acked as duplicates (a retry of an event "
                                "the stream already held)")
                            .Register(*registry_);
  events_outbox_rows_ = &prometheus::BuildGauge()
                             .Name("contextd_events_outbox_rows")
                             .Help("Events in the outbox not yet published (every instance's)")
                             .Register(*registry_);
  events_outbox_age_ = &prometheus::BuildGauge()
                            .Name("contextd_events_outbox_oldest_age_seconds")
                            .Help("Age of the oldest event in the outbox (0 when empty)")
                            .Register(*registry_);
  events_taken_over_ = &prometheus::BuildCounter()
                            .Name("contextd_events_outbox_taken_over_total")
                            .Help(
                                "Outbox events another instance left unpublished (its lease ran "
                                "out) that this instance took over")
                            .Register(*registry_);
  events_published_->Add({});
  events_duplicates_->Add({});
  events_outbox_rows_->Add({});
  events_outbox_age_->Add({});
  events_taken_over_->Add({});
  for (const char* reason : {"queue_full", "disconnected", "publish_error", "retries_exhausted",
                             "shutdown", "outbox_trimmed", "outbox_error"}) {
    events_dropped_->Add({{"reason", reason}});
  }
}

void Metrics::EventPublished() {
  if (events_published_ != nullptr) events_published_->Add({}).Increment();
}

void Metrics::EventDropped(std::string_view reason, int64_t n) {
  if (events_dropped_ != nullptr) {
    events_dropped_->Add({{"reason", std::string(reason)}}).Increment(static_cast<double>(n));
  }
}

void Metrics::EventOutboxDepth(int64_t rows, double oldest_age_seconds) {
  if (events_outbox_rows_ == nullptr) return;
  events_outbox_rows_->Add({}).Set(static_cast<double>(rows));
  events_outbox_age_->Add({}).Set(oldest_age_seconds);
}

void Metrics::EventsTakenOver(int64_t n) {
  if (events_taken_over_ != nullptr) events_taken_over_->Add({}).Increment(static_cast<double>(n));
}

void Metrics::EventDuplicate() {
  if (events_duplicates_ != nullptr) events_duplicates_->Add({}).Increment();
}

void Metrics::BuildRetentionMetrics() {
  retention_rows_ = &prometheus::BuildCounter()
                         .Name("contextd_retention_swept_rows_total")
                         .Help(
                             "Rows the retention sweep deleted, by kind (sessions, scopes, "
                             "events, blobs, usage_rows, threads, rewrites, memory_history)")
                         .Register(*registry_);
  retention_bytes_ = &prometheus::BuildCounter()
                          .Name("contextd_retention_swept_bytes_total")
                          .Help(
                              "Bytes of the rows the retention sweep deleted, by kind (blobs, "
                              "rewrites)")
                          .Register(*registry_);
  retention_kept_rows_ = &prometheus::BuildGauge()
                              .Name("contextd_retention_kept_rows")
                              .Help("Rows kept after the last sweep, by kind")
                              .Register(*registry_);
  retention_kept_bytes_ = &prometheus::BuildGauge()
                               .Name("contextd_retention_kept_bytes")
                               .Help(
                                   "Bytes kept after the last sweep, by kind (blobs, rewrites, "
                                   "database)")
                               .Register(*registry_);
  retention_sweeps_ = &prometheus::BuildCounter()
                           .Name("contextd_retention_sweeps_total")
                           .Help("Retention sweeps, by outcome (ok, skipped, failed)")
                           .Register(*registry_);
  retention_last_seconds_ = &prometheus::BuildGauge()
                                 .Name("contextd_retention_last_sweep_seconds")
                                 .Help("How long the last retention sweep ran")
                                 .Register(*registry_)
                                 .Add({});
  retention_batch_max_seconds_ =
      &prometheus::BuildGauge()
           .Name("contextd_retention_last_batch_max_seconds")
           .Help("The longest write transaction of the last retention sweep")
           .Register(*registry_)
           .Add({});
}

void Metrics::RetentionSwept(const store::RetentionReport& r) {
  retention_sweeps_->Add({{"outcome", r.skipped ? "skipped" : "ok"}}).Increment();
  const std::pair<const char*, const store::RetentionCount*> kinds[] = {
      {"sessions", &r.sessions},     {"scopes", &r.scopes},
      {"events", &r.events},         {"blobs", &r.blobs},
      {"usage_rows", &r.usage_rows}, {"threads", &r.threads},
      {"rewrites", &r.rewrites},     {"memory_history", &r.memory_history}};
  for (const auto& [kind, count] : kinds) {
    retention_rows_->Add({{"kind", kind}}).Increment(static_cast<double>(count->rows));
  }
  retention_bytes_->Add({{"kind", "blobs"}}).Increment(static_cast<double>(r.blobs.bytes));
  retention_bytes_->Add({{"kind", "rewrites"}}).Increment(static_cast<double>(r.rewrites.bytes));
  retention_last_seconds_->Set(static_cast<double>(r.elapsed_ms) / 1e3);
  retention_batch_max_seconds_->Set(static_cast<double>(r.batch_us_max) / 1e6);
}

void Metrics::RetentionFailed() { retention_sweeps_->Add({{"outcome", "failed"}}).Increment(); }

void Metrics::RetentionKept(const store::RetentionKept& k) {
  const std::pair<const char*, int64_t> rows[] = {
      {"scopes", k.scopes},         {"events", k.events},
      {"blobs", k.blobs},           {"usage_rows", k.usage_rows},
      {"usage_days", k.usage_days}, {"threads", k.threads},
      {"rewrites", k.rewrites},     {"memory_history", k.memory_history}};
  for (const auto& [kind, n] : rows) {
    retention_kept_rows_->Add({{"kind", kind}}).Set(static_cast<double>(n));
  }
  retention_kept_bytes_->Add({{"kind", "blobs"}}).Set(static_cast<double>(k.blob_bytes));
  retention_kept_bytes_->Add({{"kind", "rewrites"}}).Set(static_cast<double>(k.rewrite_bytes));
  retention_kept_bytes_->Add({{"kind", "database"}}).Set(static_cast<double>(k.database_bytes));
}

}  // namespace contextd::server
