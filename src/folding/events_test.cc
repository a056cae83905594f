#include "folding/events.h"

#include <gtest/gtest.h>

#include <vector>

namespace contextd::folding {
namespace {

TEST(EventBusTest, NamesMatchTheIssue) {
  EXPECT_EQ(std::string_view(BranchEventName(BranchEventType::kCreated)), "branch.created");
  EXPECT_EQ(std::string_view(BranchEventName(BranchEventType::kWarning)), "branch.warning");
  EXPECT_EQ(std::string_view(BranchEventName(BranchEventType::kFolded)), "branch.folded");
  EXPECT_EQ(std::string_view(BranchEventName(BranchEventType::kForceReturned)),
            "branch.force_returned");
}

TEST(EventBusTest, DeliversSynchronouslyInOrderAndUnsubscribes) {
  EventBus bus;
  std::vector<std::string> seen;
  auto a = bus.Subscribe([&](const BranchEvent& e) { seen.push_back("a:" + e.branch_id); });
  bus.Subscribe([&](const BranchEvent& e) { seen.push_back("b:" + e.branch_id); });
  BranchEvent e;
  e.branch_id = "br_1";
  bus.Publish(e);
  EXPECT_EQ(seen, (std::vector<std::string>{"a:br_1", "b:br_1"}));
  EXPECT_TRUE(bus.Unsubscribe(a));
  EXPECT_FALSE(bus.Unsubscribe(a));
  seen.clear();
  bus.Publish(e);
  EXPECT_EQ(seen, (std::vector<std::string>{"b:br_1"}));
}

TEST(EventBusTest, SubscriberMayUnsubscribeItselfDuringPublish) {
  EventBus bus;
  int calls = 0;
  EventBus::SubscriptionId id = 0;
  id = bus.Subscribe([&](const BranchEvent&) {
    ++calls;
    bus.Unsubscribe(id);
  });
  bus.Publish(BranchEvent{});
  bus.Publish(BranchEvent{});
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace contextd::folding
