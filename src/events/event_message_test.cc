#include "events/event_message.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace contextd::events {
namespace {

folding::BranchEvent Event(folding::BranchEventType type) {
  folding::BranchEvent e;
  e.type = type;
  e.session = folding::SessionKey{"acme", "web.app", "ses_1"};
  e.branch_id = "br_1";
  e.parent_id = "br_0";
  e.depth = 1;
  e.status = folding::BranchStatus::kActive;
  e.budget_allocated = 1000;
  e.tokens_used = 850;
  e.at_ms = 1'700'000'000'123;
  return e;
}

TEST(Rfc3339Millis, FormatsUtc) {
  EXPECT_EQ(Rfc3339Millis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(Rfc3339Millis(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
}

TEST(NewEventId, IsPrefixedAndUnique) {
  std::string a = NewEventId();
  EXPECT_EQ(a.rfind("ev_", 0), 0u);
  EXPECT_EQ(a.size(), 35u);
  EXPECT_NE(a, NewEventId());
}

TEST(BranchEventMessage, CreatedHasTheEnvelopeAndBudget) {
  folding::BranchEvent e = Event(folding::BranchEventType::kCreated);
  e.text_tokens = 42;
  auto m = BranchEventMessage(e, "contextd", "ev_x");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->id, "ev_x");
  EXPECT_EQ(m->type, "branch.created");
  EXPECT_EQ(m->subject, "contextd.acme.web%2Eapp.ses_1.branch.created");
  auto j = nlohmann::json::parse(m->payload);
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["id"], "ev_x");
  EXPECT_EQ(j["type"], "branch.created");
  EXPECT_EQ(j["time"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["time_ms"], 1'700'000'000'123);
  EXPECT_EQ(j["tenant"], "acme");
  EXPECT_EQ(j["project"], "web.app");
  EXPECT_EQ(j["session"], "ses_1");
  EXPECT_EQ(j["branch_id"], "br_1");
  EXPECT_EQ(j["parent_id"], "br_0");
  EXPECT_EQ(j["depth"], 1);
  EXPECT_EQ(j["status"], "active");
  EXPECT_EQ(j["budget_allocated"], 1000);
  EXPECT_EQ(j["tokens_used"], 850);
  EXPECT_EQ(j["prompt_tokens"], 42);
  EXPECT_FALSE(j.contains("summary"));
}

TEST(BranchEventMessage, RootChildHasANullParent) {
  folding::BranchEvent e = Event(folding::BranchEventType::kWarning);
  e.parent_id.clear();
  auto j = nlohmann::json::parse(BranchEventMessage(e, "contextd", "ev_x")->payload);
  EXPECT_TRUE(j["parent_id"].is_null());
  EXPECT_EQ(j["type"], "branch.warning");
}

TEST(BranchEventMessage, FoldedCarriesTheStoredSummary) {
  folding::Branch b;
  b.summary = "found it: [REDACTED:aws-access-token]";
  b.finish_reason = "returned";
  folding::BranchEvent e = Event(folding::BranchEventType::kFolded);
  e.status = folding::BranchStatus::kCompleted;
  e.tokens = 700;
  e.text_tokens = 12;
  e.branch = &b;
  auto j = nlohmann::json::parse(BranchEventMessage(e, "contextd", "ev_x")->payload);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["summary"], b.summary);
  EXPECT_EQ(j["summary_tokens"], 12);
  EXPECT_EQ(j["tokens_folded"], 700);
  EXPECT_EQ(j["reason"], "returned");
}

TEST(BranchEventMessage, ForceReturnedCarriesTheReason) {
  folding::BranchEvent e = Event(folding::BranchEventType::kForceReturned);
  e.status = folding::BranchStatus::kBudgetExhausted;
  e.reason = "budget exhausted";
  auto m = BranchEventMessage(e, "contextd", "ev_x");
  EXPECT_EQ(m->subject, "contextd.acme.web%2Eapp.ses_1.branch.force_returned");
  auto j = nlohmann::json::parse(m->payload);
  EXPECT_EQ(j["status"], "budget_exhausted");
  EXPECT_EQ(j["reason"], "budget exhausted");
  EXPECT_TRUE(j["tokens_folded"].is_null());
  EXPECT_TRUE(j["summary"].is_null());  // no committed branch given
}

TEST(BranchEventMessage, ChargedStaysInProcess) {
  EXPECT_FALSE(BranchEventMessage(Event(folding::BranchEventType::kCharged), "c", "ev_x"));
}

TEST(MemoryEventMessage, HasNoSession) {
  memory::MemoryEvent e{"memory.injected", "acme", "p", "br_1", {"mem_1", "mem_2"}, 120};
  EventMessage m = MemoryEventMessage(e, "contextd", "ev_y", 0);
  EXPECT_EQ(m.subject, "contextd.acme.p.%.memory.injected");
  auto j = nlohmann::json::parse(m.payload);
  EXPECT_TRUE(j["session"].is_null());
  EXPECT_EQ(j["branch_id"], "br_1");
  EXPECT_EQ(j["memory_ids"], nlohmann::json::array({"mem_1", "mem_2"}));
  EXPECT_EQ(j["tokens"], 120);
  memory::MemoryEvent r{"memory.retired", "acme", "p", "", {"mem_1"}, 0};
  EXPECT_TRUE(
      nlohmann::json::parse(MemoryEventMessage(r, "c", "ev_z", 0).payload)["branch_id"].is_null());
}

}  // namespace
}  // namespace contextd::events
