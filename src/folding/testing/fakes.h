// Test doubles for the folding engine's dependencies: a whitespace-word TokenCounter, a Scrubber
// that redacts the literal "SECRET123", and an in-memory BranchStore with failure injection.
// For tests only (never linked into the server). All are thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "folding/branch_store.h"
#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::folding::testing {

// Counts whitespace-separated words: "a bb  c" is 3 tokens.
class WordTokenCounter final : public tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override {
    size_t n = 0;
    bool in_word = false;
    for (char c : text) {
      bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
      if (!space && !in_word) ++n;
      in_word = !space;
    }
    return n;
  }
  std::string_view name() const override { return "test_words"; }
};

// Replaces every "SECRET123" with "[REDACTED:test-secret:SE...]"; idempotent.
class FakeScrubber final : public scrub::Scrubber {
 public:
  static constexpr std::string_view kSecret = "SECRET123";
  static constexpr std::string_view kMarker = "[REDACTED:test-secret:SE...]";
  std::string Scrub(std::string_view text) const override {
    std::string out;
    size_t pos = 0;
    for (;;) {
      size_t hit = text.find(kSecret, pos);
      if (hit == std::string_view::npos) break;
      out.append(text.substr(pos, hit - pos));
      out.append(kMarker);
      pos = hit + kSecret.size();
    }
    out.append(text.substr(pos));
    return out;
  }
};

// A BranchStore in a map. `fail_commits` makes the next Commit calls fail (nothing applied).
class InMemoryBranchStore final : public BranchStore {
 public:
  std::atomic<int> fail_commits{0};
  std::atomic<int> commits{0};

  absl::Status Commit(const BranchWrite& write) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_commits > 0) {
      --fail_commits;
      return absl::UnavailableError("injected store failure");
    }
    for (const Branch& b : write.inserts) {
      if (branches_.count(b.id)) return absl::AlreadyExistsError(b.id);
    }
    for (const BranchUpdate& u : write.updates) {
      bool inserted = std::any_of(write.inserts.begin(), write.inserts.end(),
                                  [&](const Branch& b) { return b.id == u.id; });
      if (!branches_.count(u.id) && !inserted) return absl::NotFoundError(u.id);
    }
    for (const Branch& b : write.inserts) {
      branches_[b.id] = b;
      order_.push_back(b.id);
    }
    for (const BranchUpdate& u : write.updates) {
      Branch& b = branches_[u.id];
      b.status = u.status;
      b.tokens_used = u.tokens_used;
      b.reserved_for_children = u.reserved_for_children;
      b.summary = u.summary;
      b.finish_reason = u.finish_reason;
      b.finished_at_ms = u.finished_at_ms;
      b.memory_queued = u.memory_queued;
    }
    for (const ChargeRow& c : write.charges) charges_[c.branch_id].push_back(c);
    ++commits;
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<Branch>> Get(std::string_view id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = branches_.find(std::string(id));
    if (it == branches_.end()) return std::optional<Branch>();
    return std::optional<Branch>(Strip(it->second));
  }

  absl::StatusOr<std::vector<Branch>> ListSession(const SessionKey& session) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Branch> out;
    for (const std::string& id : order_) {
      if (branches_.at(id).session == session) out.push_back(Strip(branches_.at(id)));
    }
    return out;
  }

  absl::StatusOr<std::vector<Branch>> ListLive() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Branch> out;
    for (const std::string& id : order_) {
      if (IsLive(branches_.at(id).status)) out.push_back(Strip(branches_.at(id)));
    }
    return out;
  }

  absl::StatusOr<RecentCharges> GetRecentCharges(std::string_view branch_id, int limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    RecentCharges out;
    auto it = charges_.find(std::string(branch_id));
    if (it == charges_.end()) return out;
    out.total = static_cast<int64_t>(it->second.size());
    size_t start = it->second.size() > static_cast<size_t>(limit) ? it->second.size() - limit : 0;
    out.rows.assign(it->second.begin() + static_cast<std::ptrdiff_t>(start), it->second.end());
    return out;
  }

 private:
  // What a real store returns: the monotonic deadline is not stored.
  static Branch Strip(Branch b) {
    b.deadline_mono = {};
    return b;
  }
  std::mutex mu_;
  std::map<std::string, Branch> branches_;
  std::vector<std::string> order_;
  std::map<std::string, std::vector<ChargeRow>> charges_;
};

}  // namespace contextd::folding::testing
