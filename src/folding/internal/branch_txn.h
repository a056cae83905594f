// BranchManager::Txn and the helpers shared by the files that implement BranchManager
// (branch_manager.cc: the operations; branch_endings.cc: force-returns, deadlines, recovery).
// Private to the folding room; executor only, like BranchManager.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "folding/branch_manager.h"

namespace contextd::folding {
namespace internal {

// Excerpts kept in memory per branch for its partial summary (all are in the store).
inline constexpr size_t kRecentExcerpts = 8;

inline BranchEvent EventFor(BranchEventType type, const Branch& b) {
  BranchEvent e;
  e.type = type;
  e.session = b.session;
  e.branch_id = b.id;
  e.parent_id = b.parent_id;
  e.depth = b.depth;
  e.status = b.status;
  e.budget_allocated = b.budget_allocated;
  e.tokens_used = b.tokens_used;
  return e;
}

inline bool CrossesWarning(const Branch& b) {
  return b.budget_allocated > 0 && static_cast<double>(b.tokens_used) >=
                                       kWarningRatio * static_cast<double>(b.budget_allocated);
}

}  // namespace internal

// Collects the changes of one operation on working copies, writes them to the store in one
// Commit, and only then applies them to the in-memory state (all or nothing).
class BranchManager::Txn {
 public:
  explicit Txn(BranchManager& m) : m_(m), now_ms_(m.executor_.clock().WallMillis()) {}

  int64_t now_ms() const { return now_ms_; }

  // The working copy of a branch that exists in memory (copied on first touch).
  Branch& Get(const std::string& id) {
    auto it = touched_.find(id);
    if (it != touched_.end()) return it->second;
    return touched_.emplace(id, m_.nodes_.at(id).branch).first->second;
  }
  BranchStatus StatusOf(const std::string& id) const {
    auto it = touched_.find(id);
    return it != touched_.end() ? it->second.status : m_.nodes_.at(id).branch.status;
  }

  void Insert(Branch b) { inserts_.push_back(std::move(b)); }

  // Appends a charge row and its excerpt to branch `id`.
  void Record(const std::string& id, std::string kind, std::string label, std::string excerpt,
              int64_t tokens) {
    ChargeRow row;
    row.branch_id = id;
    row.at_ms = now_ms_;
    row.kind = kind;
    row.label = label;
    row.excerpt = excerpt;
    row.tokens = tokens;
    charges_.push_back(std::move(row));
    added_[id].push_back(Excerpt{std::move(kind), std::move(label), std::move(excerpt)});
  }

  // The branch's excerpts including those added in this transaction, oldest first, bounded.
  std::deque<Excerpt> Excerpts(const std::string& id, int64_t* total) const {
    const Node& node = m_.nodes_.at(id);
    std::deque<Excerpt> out = node.recent;
    *total = node.records_total;
    auto it = added_.find(id);
    if (it != added_.end()) {
      for (const Excerpt& e : it->second) {
        out.push_back(e);
        ++*total;
      }
    }
    while (out.size() > internal::kRecentExcerpts) out.pop_front();
    return out;
  }

  void Ended(const std::string& id) { ended_.push_back(id); }
  void Warned(const std::string& id) { warned_.insert(id); }
  bool IsWarned(const std::string& id) const {
    return warned_.count(id) > 0 || m_.nodes_.at(id).warned;
  }
  void Event(BranchEvent e) {
    e.at_ms = now_ms_;
    events_.push_back(std::move(e));
  }

  absl::Status Commit() {
    BranchWrite write;
    write.inserts = inserts_;
    for (const auto& [id, b] : touched_) {
      BranchUpdate u;
      u.id = id;
      u.status = b.status;
      u.tokens_used = b.tokens_used;
      u.reserved_for_children = b.reserved_for_children;
      u.summary = b.summary;
      u.finish_reason = b.finish_reason;
      u.finished_at_ms = b.finished_at_ms;
      u.memory_queued = b.memory_queued;
      u.expected_version = b.version;
      write.updates.push_back(std::move(u));
    }
    write.charges = charges_;
    if (m_.outbox_encoder_ && !write.empty()) {
      for (BranchEvent& e : events_) {
        const bool with_branch =
            e.type != BranchEventType::kCharged && e.type != BranchEventType::kWarning;
        e.branch = with_branch ? WorkingCopy(e.branch_id) : nullptr;
        std::optional<OutboxEvent> row = m_.outbox_encoder_(e);
        e.branch = nullptr;
        if (row) write.events.push_back(std::move(*row));
      }
    }
    if (!write.empty()) RETURN_IF_ERROR(m_.store_.Commit(write));

    // Durable: apply to memory.
    for (Branch& b : inserts_) {
      SessionState& state = m_.sessions_[b.session];
      m_.AddNode(std::move(b), state);
    }
    for (auto& [id, b] : touched_) {
      ++b.version;  // as the store counted the update (where it counts)
      auto sit = m_.sessions_.find(b.session);
      if (sit != m_.sessions_.end()) ++sit->second.stamp;
      m_.nodes_.at(id).branch = std::move(b);
    }
    for (auto& [id, list] : added_) {
      Node& node = m_.nodes_.at(id);
      for (Excerpt& e : list) {
        node.recent.push_back(std::move(e));
        ++node.records_total;
      }
      while (node.recent.size() > internal::kRecentExcerpts) node.recent.pop_front();
    }
    for (const std::string& id : warned_) m_.nodes_.at(id).warned = true;
    for (const std::string& id : ended_) {
      Node& node = m_.nodes_.at(id);
      if (node.timer != 0) {
        m_.executor_.CancelTimer(node.timer);
        node.timer = 0;
      }
      auto sit = m_.sessions_.find(node.branch.session);
      if (sit != m_.sessions_.end()) {
        auto& active = sit->second.active;
        active.erase(std::remove(active.begin(), active.end(), id), active.end());
      }
      --m_.active_count_;
    }
    if (m_.events_ != nullptr) {
      for (BranchEvent& e : events_) {
        if (e.type != BranchEventType::kCharged && e.type != BranchEventType::kWarning) {
          auto it = m_.nodes_.find(e.branch_id);
          if (it != m_.nodes_.end()) e.branch = &it->second.branch;
        }
        m_.events_->Publish(e);
        e.branch = nullptr;
      }
    }
    return absl::OkStatus();
  }

 private:
  // The branch `id` as this transaction writes it (null for kCharged/kWarning, like Publish).
  const Branch* WorkingCopy(const std::string& id) const {
    auto t = touched_.find(id);
    if (t != touched_.end()) return &t->second;
    for (const Branch& b : inserts_) {
      if (b.id == id) return &b;
    }
    auto n = m_.nodes_.find(id);
    return n != m_.nodes_.end() ? &n->second.branch : nullptr;
  }

  BranchManager& m_;
  int64_t now_ms_;
  std::map<std::string, Branch> touched_;
  std::vector<Branch> inserts_;
  std::vector<ChargeRow> charges_;
  std::map<std::string, std::vector<Excerpt>> added_;
  std::vector<std::string> ended_;
  std::set<std::string> warned_;
  std::vector<BranchEvent> events_;
};

}  // namespace contextd::folding
