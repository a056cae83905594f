#include "server/metrics.h"

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace contextd::server {

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
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
  utilisation_ = &prometheus::BuildHistogram()
                      .Name("contextd_branch_budget_utilisation_ratio")
                      .Help("Tokens used over tokens allocated, at the end of each branch")
                      .Register(*registry_)
                      .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.25, 0.5, 0.75, 0.8,
                                                                       0.9, 1.0});
  tool_latency_ = &prometheus::BuildHistogram()
                       .Name("contextd_tool_call_seconds")
                       .Help("Time spent inside contextd per tool call, by tool")
                       .Register(*registry_);
  commits_ = &prometheus::BuildCounter()
                  .Name("contextd_store_group_commits_total")
                  .Help("SQLite group commits, by outcome (ok, failed)")
                  .Register(*registry_);
  commit_seconds_ = &prometheus::BuildHistogram()
                         .Name("contextd_store_group_commit_seconds")
                         .Help("Time to commit one group of writes")
                         .Register(*registry_)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01, 0.05, 0.25});
  commit_held_ = &prometheus::BuildHistogram()
                      .Name("contextd_store_group_commit_held_messages")
                      .Help("Outbound messages released by one group commit")
                      .Register(*registry_)
                      .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64,
                                                                       128});
}

Metrics::~Metrics() = default;

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
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

}  // namespace contextd::server
