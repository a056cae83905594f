#include "folding/events.h"

#include <vector>

namespace contextd::folding {

const char* BranchEventName(BranchEventType type) {
  switch (type) {
    case BranchEventType::kCreated:
      return "branch.created";
    case BranchEventType::kWarning:
      return "branch.warning";
    case BranchEventType::kFolded:
      return "branch.folded";
    case BranchEventType::kForceReturned:
      return "branch.force_returned";
    case BranchEventType::kCharged:
      return "branch.charged";
  }
  return "branch.unknown";
}

EventBus::SubscriptionId EventBus::Subscribe(Subscriber subscriber) {
  std::lock_guard<std::mutex> lock(mu_);
  SubscriptionId id = next_id_++;
  subscribers_.emplace(id, std::make_shared<Subscriber>(std::move(subscriber)));
  return id;
}

bool EventBus::Unsubscribe(SubscriptionId id) {
  std::lock_guard<std::mutex> lock(mu_);
  return subscribers_.erase(id) > 0;
}

void EventBus::Publish(const BranchEvent& event) {
  std::vector<std::shared_ptr<Subscriber>> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot.reserve(subscribers_.size());
    for (auto& [id, sub] : subscribers_) snapshot.push_back(sub);
  }
  // Called without the lock so that a subscriber may (un)subscribe.
  for (auto& sub : snapshot) (*sub)(event);
}

}  // namespace contextd::folding
