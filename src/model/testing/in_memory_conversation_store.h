// InMemoryConversationStore: a ConversationStore in maps, with the SQLite store's semantics
// (first value of a (kind, key) wins, rewrites in the order first saved, totals per tenant or
// branch), plus failure injection, for the model room's unit tests. Nothing is durable. For tests
// only (never linked into the server). Thread-safe (one mutex).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/conversation_store.h"

namespace contextd::model::testing {

class InMemoryConversationStore final : public ConversationStore {
 public:
  // While positive, the next Save / RecordUsage calls fail with Unavailable (nothing applied),
  // one per call.
  std::atomic<int> fail_saves{0};
  std::atomic<int> fail_usage{0};
  // Calls that succeeded.
  std::atomic<int> saves{0};

  absl::StatusOr<std::optional<ConversationState>> Load(const ConversationKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = threads_.find(Id(key));
    if (it == threads_.end()) return std::optional<ConversationState>();
    return std::optional<ConversationState>(it->second.state);
  }

  absl::Status Save(const ConversationKey& key, const ConversationUpdate& update) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_saves > 0) {
      --fail_saves;
      return absl::UnavailableError("injected conversation store failure");
    }
    for (const Rewrite& r : update.new_rewrites) {
      if (!IsKind(r.kind)) {
        return absl::FailedPreconditionError("rewrite of unknown kind (CHECK constraint)");
      }
    }
    auto [it, inserted] = threads_.try_emplace(Id(key));
    Thread& t = it->second;
    if (inserted) t.state.created_ms = update.at_ms;
    t.state.frontier = update.frontier;
    t.state.requests += 1;
    t.state.last_ms = update.at_ms;
    for (const Rewrite& r : update.new_rewrites) {
      if (t.keys.emplace(r.kind, r.key).second) t.state.rewrites.push_back(r);
    }
    ++saves;
    return absl::OkStatus();
  }

  absl::Status RecordUsage(const UsageRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_usage > 0) {
      --fail_usage;
      return absl::UnavailableError("injected conversation store failure");
    }
    usage_.push_back(record);
    return absl::OkStatus();
  }

  absl::StatusOr<BranchViewUsage> ViewUsage(std::string_view tenant,
                                            std::string_view branch_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    BranchViewUsage u;
    for (const UsageRecord& r : usage_) {
      if (r.key.tenant != tenant || r.branch_id != branch_id) continue;
      u.isolated_requests += r.branch_view == "isolated";
      u.inherited_requests += r.branch_view == "inherited";
      u.view_tokens_spared += r.view_tokens_spared;
    }
    return u;
  }
  absl::StatusOr<UsageTotals> Totals(std::string_view tenant, std::string_view branch_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    UsageTotals t;
    for (const UsageRecord& r : usage_) {
      if (r.key.tenant != tenant || (!branch_id.empty() && r.branch_id != branch_id)) continue;
      ++t.requests;
      t.input_tokens += r.input_tokens;
      t.cache_read_input_tokens += r.cache_read_input_tokens;
      t.cache_creation_input_tokens += r.cache_creation_input_tokens;
      t.output_tokens += r.output_tokens;
      t.tokens_before += r.tokens_before;
      t.tokens_after += r.tokens_after;
      t.last_at_ms = std::max(t.last_at_ms, r.at_ms);
    }
    return t;
  }

  absl::StatusOr<std::vector<ConversationSummary>> RecentConversations(std::string_view tenant,
                                                                       int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, ConversationSummary> by_id;
    for (const UsageRecord& r : usage_) {
      if (r.key.tenant != tenant) continue;
      ConversationSummary& c = by_id[r.key.conversation];
      c.conversation = r.key.conversation;
      if (c.requests == 0 || r.at_ms < c.first_at_ms) c.first_at_ms = r.at_ms;
      // The project of the latest request (the first recorded of equal times).
      if (c.requests == 0 || r.at_ms > c.last_at_ms) {
        c.last_at_ms = r.at_ms;
        c.project = r.project;
      }
      ++c.requests;
      c.folds_new += r.folds_new;
      for (const auto& [reason, n] : r.folds_skipped) {
        if (n > 0) c.folds_skipped[reason] += n;  // as the stores keep them: no zero counts
      }
      c.tokens_before += r.tokens_before;
      c.tokens_after += r.tokens_after;
      c.isolated_requests += r.branch_view == "isolated";
      c.view_tokens_spared += r.view_tokens_spared;
    }
    std::vector<ConversationSummary> out;
    for (auto& [id, c] : by_id) out.push_back(std::move(c));
    std::sort(out.begin(), out.end(),
              [](const ConversationSummary& a, const ConversationSummary& b) {
                return a.last_at_ms != b.last_at_ms ? a.last_at_ms > b.last_at_ms
                                                    : a.conversation < b.conversation;
              });
    if (limit >= 0 && out.size() > static_cast<size_t>(limit)) {
      out.resize(static_cast<size_t>(limit));
    }
    return out;
  }

  // Every usage row recorded, in order (for assertions).
  std::vector<UsageRecord> usage() {
    std::lock_guard<std::mutex> lock(mu_);
    return usage_;
  }

 private:
  using ThreadId = std::tuple<std::string, std::string, std::string>;
  struct Thread {
    ConversationState state;
    std::set<std::pair<RewriteKind, std::string>> keys;
  };

  static ThreadId Id(const ConversationKey& key) {
    return {key.tenant, key.conversation, key.thread};
  }
  static bool IsKind(RewriteKind kind) {
    return kind == RewriteKind::kBlock || kind == RewriteKind::kAppend ||
           kind == RewriteKind::kFold || kind == RewriteKind::kAutoFold ||
           kind == RewriteKind::kView || kind == RewriteKind::kDropThinking ||
           kind == RewriteKind::kLessons;
  }

  std::mutex mu_;
  std::map<ThreadId, Thread> threads_;
  std::vector<UsageRecord> usage_;
};

}  // namespace contextd::model::testing
