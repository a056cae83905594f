// EventBus: in-process publish/subscribe for branch lifecycle events (branch.created,
// branch.warning, branch.folded, branch.force_returned, and the in-process-only branch.charged).
// Subscribe/Unsubscribe are thread-safe; Publish calls every subscriber synchronously on the
// publishing thread (the engine executor), so subscribers must be quick and must not call back
// into the BranchManager. A subscriber may (un)subscribe from inside a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "folding/branch.h"

namespace contextd::folding {

enum class BranchEventType {
  kCreated,        // "branch.created"
  kWarning,        // "branch.warning": the branch crossed 80% of its budget
  kFolded,         // "branch.folded": returned by branch_return (status completed)
  kForceReturned,  // "branch.force_returned": timeout, budget_exhausted or failed
  kCharged,        // "branch.charged": tokens were charged (in-process only; for metrics)
};

// The event's name as published (and as a NATS subject suffix later).
const char* BranchEventName(BranchEventType type);

// One event; fields not meaningful for the type are zero/empty.
struct BranchEvent {
  BranchEventType type = BranchEventType::kCreated;
  SessionKey session;
  std::string branch_id;
  std::string parent_id;
  int depth = 0;
  BranchStatus status = BranchStatus::kActive;
  int64_t budget_allocated = 0;
  int64_t tokens_used = 0;
  int64_t tokens = 0;  // kCharged: tokens of this charge; kFolded: tokens folded away
  std::string reason;  // kForceReturned: finish reason; kCharged: record kind
  int64_t at_ms = 0;
  // kCreated: the prompt's tokens as charged; kFolded/kForceReturned: the summary's tokens.
  int64_t text_tokens = 0;
  // kCreated, kFolded, kForceReturned from the BranchManager: the branch as committed (prompt,
  // description, summary...), so that subscribers need not read it back. Valid only during
  // Publish; null otherwise.
  const Branch* branch = nullptr;
};

class EventBus {
 public:
  using Subscriber = std::function<void(const BranchEvent&)>;
  using SubscriptionId = uint64_t;

  // Registers `subscriber` for every event; returns an id for Unsubscribe.
  SubscriptionId Subscribe(Subscriber subscriber);
  // Removes a subscription; false if unknown.
  bool Unsubscribe(SubscriptionId id);
  // Calls every current subscriber with `event`, in subscription order.
  void Publish(const BranchEvent& event);

 private:
  std::mutex mu_;
  std::map<SubscriptionId, std::shared_ptr<Subscriber>> subscribers_;
  SubscriptionId next_id_ = 1;
};

}  // namespace contextd::folding
