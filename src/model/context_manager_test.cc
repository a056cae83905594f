#include "model/context_manager.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/openai_chat_request.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/in_memory_conversation_store.h"
#include "model/testing/simple_parts.h"
#include "nlohmann/json.hpp"
#include "scrub/rule_scrubber.h"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBranch = "br_00000000000000000000000000000abc";

using testing::ByteCounter;
using testing::WordScrubber;

json Msg(const std::string& role, json content) { return {{"role", role}, {"content", content}}; }
json Result(const std::string& id, const std::string& text) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}};
}
json Use(const std::string& id, const std::string& name) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", json::object()}};
}

// Grows one conversation step by step as a client would (breakpoint on the last block).
class Conversation {
 public:
  explicit Conversation(const std::string& first = "task") {
    messages_.push_back(Msg("user", json::array({{{"type", "text"}, {"text", first}}})));
  }
  void Assistant(json blocks) { messages_.push_back(Msg("assistant", std::move(blocks))); }
  void User(json blocks) { messages_.push_back(Msg("user", std::move(blocks))); }
  std::shared_ptr<AnthropicRequest> Request() const {
    json messages = messages_;
    messages.back()["content"].back()["cache_control"] = {{"type", "ephemeral"}};
    json body = {{"model", "m"}, {"max_tokens", 10}, {"system", "sys"}, {"messages", messages}};
    auto parsed = AnthropicRequest::Parse(body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return *std::move(parsed);
  }

 private:
  json messages_ = json::array();
};

struct Fixture {
  model::testing::InMemoryConversationStore store;
  ByteCounter counter;
  WordScrubber scrubber{"SECRET"};
  std::optional<BranchFacts> facts;
  // Knows kBranch of tenant "local" as `facts`; charges it against `budget` below.
  model::testing::FakeBranchLedger ledger{
      [this](const std::string& tenant, const std::string& id) -> std::optional<BranchFacts> {
        if (tenant != "local" || id != kBranch) return std::nullopt;
        return facts;
      },
      [this](const std::string&, const std::string& id, const std::string& label,
             const std::string&, int64_t tokens) -> std::optional<folding::BranchCharge> {
        if (!facts || facts->ended) return std::nullopt;
        int64_t before = charged;
        charged += tokens;
        labels.push_back(label);
        folding::BranchCharge out;
        if (charged > budget) {
          facts->ended = true;
          facts->status = "budget_exhausted";
          facts->finish_reason = "budget exhausted";
          facts->summary = "partial: read r1";
          out.outcome.exhausted = true;
        } else if (before * 10 < budget * 8 && charged * 10 >= budget * 8) {
          out.warning = "budget 80% used in " + id;
        }
        return out;
      }};
  ContextManagerOptions options;
  std::unique_ptr<ContextManager> manager = Make(scrubber);
  // Budget of the charger below; what it was charged.
  int64_t budget = 1'000'000;
  int64_t charged = 0;
  std::vector<std::string> labels;
  std::unique_ptr<ContextManager> Make(const scrub::Scrubber& s) {
    return std::make_unique<ContextManager>(options, store, s, counter, &ledger);
  }
  AppliedRequest Apply(const Conversation& c, ContextManager* m = nullptr) {
    auto request = c.Request();
    ContextManager* target = m ? m : manager.get();
    auto applied = target->Apply("local", "session-1", request, 1000);
    EXPECT_TRUE(applied.ok()) << applied.status();
    // As the gateway does once the request is on its way.
    if (applied.ok()) target->SaveFrontier(*applied);
    return *std::move(applied);
  }
};

TEST(ContextManagerTest, RedactsNewResultsOnceAndRepeatsTheSameBytes) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("t1", "Read")}));
  c.User(json::array({Result("t1", "token SECRET123 here")}));
  AppliedRequest first = f.Apply(c);
  EXPECT_EQ(first.redactions_new, 1);
  EXPECT_THAT(first.body, Not(HasSubstr("SECRET123")));
  EXPECT_THAT(first.body, HasSubstr("token [REDACTED] here"));
  EXPECT_EQ(first.key.conversation, "session-1");

  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  AppliedRequest second = f.Apply(c);
  EXPECT_EQ(second.redactions_new, 0);
  EXPECT_EQ(second.new_messages, 2u);
  std::string redacted_block =
      R"({"type":"tool_result","tool_use_id":"t1","content":"token [REDACTED] here"})";
  EXPECT_THAT(second.body, HasSubstr(redacted_block));

  // A restart (new manager, same store) with rules that no longer redact keeps the decision;
  // the old prefix is never decided anew.
  WordScrubber none("NOTHING");
  auto restarted = f.Make(none);
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok2"}}}));
  c.User(json::array({Result("t1x", "SECRET999")}));
  AppliedRequest third = f.Apply(c, restarted.get());
  EXPECT_THAT(third.body, HasSubstr(redacted_block));
  EXPECT_THAT(third.body, HasSubstr("SECRET999"));  // new content follows the new rules
}

TEST(ContextManagerTest, OldContentIsNotRedactedByNewRules) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("t1", "Read")}));
  c.User(json::array({Result("t1", "NEWWORD42 is here")}));
  AppliedRequest first = f.Apply(c);
  EXPECT_THAT(first.body, HasSubstr("NEWWORD42"));
  WordScrubber updated("NEWWORD");
  auto reloaded = f.Make(updated);
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "NEWWORD7 typed now"}}}));
  AppliedRequest second = f.Apply(c, reloaded.get());
  EXPECT_THAT(second.body, HasSubstr("NEWWORD42 is here"));     // already sent: stays
  EXPECT_THAT(second.body, HasSubstr("[REDACTED] typed now"));  // new: redacted
}

TEST(ContextManagerTest, ARedactionAppliesOnlyToBlocksOfTheKindItWasTakenFor) {
  // The model's own text with the same bytes as a redacted user text (it echoed it): the
  // decision is keyed by bytes, but the assistant's turn is never rewritten (its thinking
  // signature covers it).
  Fixture f;
  Conversation c("start");
  c.Assistant(json::array({{{"type", "text"}, {"text", "my SECRET1"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "my SECRET1"}}}));
  AppliedRequest first = f.Apply(c);
  EXPECT_EQ(first.redactions_new, 1);
  json sent = json::parse(first.body)["messages"];
  EXPECT_EQ(sent[1]["content"][0]["text"], "my SECRET1");
  EXPECT_EQ(sent[2]["content"][0]["text"], "my [REDACTED]");
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  AppliedRequest second = f.Apply(c);
  json again = json::parse(second.body)["messages"];
  EXPECT_EQ(again[1], sent[1]);
  EXPECT_EQ(again[2]["content"][0]["text"], "my [REDACTED]");
}

TEST(ContextManagerTest, FoldsAReturnedBranchAndKeepsFoldingItAfterARestart) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create"), Use("r1", "Read")}));
  c.User(json::array(
      {Result("c1", "{\"branch_id\":\"" + kBranch + "\"}"), Result("r1", std::string(4000, 'q'))}));
  f.facts = BranchFacts{kBranch, false, "active", "", "", 1000, 0, {}};
  AppliedRequest open = f.Apply(c);
  EXPECT_EQ(open.open_branch_id, kBranch);
  EXPECT_EQ(open.folds_applied, 0);
  c.Assistant(json::array({Use("ret", "mcp__contextd__branch_return")}));
  c.User(json::array({Result("ret", "{}")}));
  f.facts = BranchFacts{kBranch, true, "completed", "", "the answer is 42", 1100, 1090, {}};
  AppliedRequest folded = f.Apply(c);
  EXPECT_EQ(folded.folds_new, 1);
  EXPECT_THAT(folded.body, HasSubstr("the answer is 42"));
  EXPECT_THAT(folded.body, Not(HasSubstr("qqqq")));
  EXPECT_LT(folded.tokens_after, folded.tokens_before);
  EXPECT_EQ(folded.open_branch_id, "");

  // After a restart, with the branch no longer in the store, the stored decision still folds.
  f.facts.reset();
  auto restarted = f.Make(f.scrubber);
  c.Assistant(json::array({{{"type", "text"}, {"text", "done"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "thanks"}}}));
  AppliedRequest later = f.Apply(c, restarted.get());
  EXPECT_EQ(later.folds_applied, 1);
  EXPECT_EQ(later.folds_new, 0);
  std::string prefix = folded.body.substr(0, folded.body.find(",\"cache_control\""));
  EXPECT_EQ(later.body.substr(0, prefix.size()), prefix);
}

TEST(ContextManagerTest, TextTypedInsideAFoldedBranchIsRedactedAndStays) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create"), Use("r1", "Read")}));
  c.User(json::array(
      {Result("c1", "{\"branch_id\":\"" + kBranch + "\"}"), Result("r1", std::string(400, 'q'))}));
  f.facts = BranchFacts{kBranch, false, "active", "", "", 0, 0, {}};
  f.Apply(c);
  c.Assistant(json::array({{{"type", "text"}, {"text", "reading"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "use key SECRET77 too"}}}));
  c.Assistant(json::array({Use("ret", "mcp__contextd__branch_return")}));
  c.User(json::array({Result("ret", "{}")}));
  f.facts = BranchFacts{kBranch, true, "completed", "", "done", 500, 490, {}};
  AppliedRequest folded = f.Apply(c);
  EXPECT_EQ(folded.folds_new, 1);
  EXPECT_THAT(folded.body, HasSubstr("use key [REDACTED] too"));
  EXPECT_THAT(folded.body, Not(HasSubstr("SECRET77")));
  EXPECT_THAT(folded.body, Not(HasSubstr("qqqq")));
}

TEST(ContextManagerTest, RemindersTheClientAppendedToTheCreatesResultRideOnRedacted) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create")}));
  c.User(json::array({Result("c1", "{\"branch_id\":\"" + kBranch +
                                       "\"}\n\n<system-reminder>\n"
                                       "# Environment: key SECRET91\n</system-reminder>")}));
  c.Assistant(json::array({Use("r1", "Read")}));
  c.User(json::array({Result("r1", std::string(400, 'q'))}));
  c.Assistant(json::array({Use("ret", "mcp__contextd__branch_return")}));
  c.User(json::array({Result("ret", "{}")}));
  // The whole span arrives at once (a new thread, as after a client's compaction).
  f.facts = BranchFacts{kBranch, true, "completed", "", "done", 500, 490, {}};
  AppliedRequest folded = f.Apply(c);
  EXPECT_EQ(folded.folds_new, 1);
  EXPECT_THAT(folded.body, HasSubstr("# Environment: key [REDACTED]"));
  EXPECT_THAT(folded.body, Not(HasSubstr("SECRET91")));
  EXPECT_THAT(folded.body, Not(HasSubstr("qqqq")));
}

TEST(ContextManagerTest, AThreadStoredBeforeItsSessionHeaderWasReadKeepsItsDecisions) {
  // Stored under its first message (no session id then); after a restart the client's session
  // header is read: the thread's stored fold still applies, under the key it was stored with.
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create"), Use("r1", "Read")}));
  c.User(json::array(
      {Result("c1", "{\"branch_id\":\"" + kBranch + "\"}"), Result("r1", std::string(400, 'q'))}));
  c.Assistant(json::array({Use("ret", "mcp__contextd__branch_return")}));
  c.User(json::array({Result("ret", "{}")}));
  f.facts = BranchFacts{kBranch, true, "completed", "", "done", 500, 490, {}};
  auto before = f.manager->Apply("local", "", c.Request(), 1000);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->folds_new, 1);
  f.facts.reset();  // the branch is gone from the store: only the stored fold can fold it
  auto restarted = f.Make(f.scrubber);
  c.Assistant(json::array({{{"type", "text"}, {"text", "done"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  auto after = restarted->Apply("local", "ses_123", c.Request(), 2000);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->folds_applied, 1);
  EXPECT_EQ(after->key.conversation, before->key.conversation);
  EXPECT_THAT(after->body, Not(HasSubstr("qqqq")));
  restarted->SaveFrontier(*after);
}

TEST(ContextManagerTest, ABranchTheModelAlreadyAnsweredIsReportedOnce) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create")}));
  c.User(json::array({Result("c1", "{\"branch_id\":\"" + kBranch + "\"}")}));
  c.Assistant(json::array({Use("ret", "mcp__contextd__branch_return")}));
  c.User(json::array({Result("ret", "{}")}));
  c.Assistant(json::array({{{"type", "text"}, {"text", "answered unfolded"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  f.facts = BranchFacts{kBranch, true, "completed", "", "done", 500, 490, {}};
  AppliedRequest first = f.Apply(c);
  EXPECT_EQ(first.folds_applied, 0);
  EXPECT_THAT(first.skipped, ::testing::ElementsAre(SkipReason::kAnswered));
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "more"}}}));
  AppliedRequest second = f.Apply(c);
  EXPECT_EQ(second.folds_applied, 0);
  EXPECT_TRUE(second.skipped.empty());
}

TEST(ContextManagerTest, ChargesTheBranchSpanWarnsOnceAndFoldsItWhenExhausted) {
  Fixture f;
  f.budget = 2000;
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create"), Use("r1", "Read")}));
  c.User(json::array(
      {Result("c1", "{\"branch_id\":\"" + kBranch + "\"}"), Result("r1", std::string(2000, 'a'))}));
  f.facts = BranchFacts{kBranch, false, "active", "", "", 0, 0, {}};
  AppliedRequest first = f.Apply(c);
  // The Read result (2000 bytes = 500 tokens here) and its call, not contextd's own result.
  EXPECT_GT(first.tokens_charged, 500);
  EXPECT_LT(first.tokens_charged, 520);
  EXPECT_THAT(f.labels, ::testing::ElementsAre("Read"));
  EXPECT_FALSE(first.warned);

  c.Assistant(json::array({Use("b1", "Bash")}));
  c.User(json::array({Result("b1", std::string(4400, 'b'))}));
  AppliedRequest second = f.Apply(c);
  EXPECT_TRUE(second.warned);
  EXPECT_THAT(second.body, HasSubstr("[contextd] budget 80% used in " + kBranch));
  // Only what arrived since: the first span is not charged again.
  EXPECT_LT(second.tokens_charged, 1200);

  // The warning stays at its place on every later request, and is not decided again.
  c.Assistant(json::array({{{"type", "text"}, {"text", "thinking"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "<system-reminder>x</system-reminder>"}}}));
  AppliedRequest third = f.Apply(c);
  EXPECT_FALSE(third.warned);
  EXPECT_THAT(third.body, HasSubstr("[contextd] budget 80% used in " + kBranch));

  // Past the budget: force-returned, and folded at this tail with the notice.
  c.Assistant(json::array({Use("b2", "Bash")}));
  c.User(json::array({Result("b2", std::string(4000, 'c'))}));
  AppliedRequest fourth = f.Apply(c);
  EXPECT_TRUE(fourth.exhausted);
  EXPECT_EQ(fourth.folds_new, 1);
  EXPECT_THAT(fourth.body, HasSubstr("force-returned (budget_exhausted"));
  EXPECT_THAT(fourth.body, Not(HasSubstr("cccc")));
  EXPECT_THAT(fourth.body, Not(HasSubstr("aaaa")));
  EXPECT_EQ(fourth.open_branch_id, "");
}

TEST(ContextManagerTest, KeepsTheLastRequestForTheNextOnlyWithinItsByteBudget) {
  // Parses `c` for conversation "s" and applies it; returns how many messages the parse took over.
  auto round = [](ContextManager& manager, const Conversation& c) {
    auto parsed = manager.Parse(ModelApi::kAnthropicMessages, "local", "s", c.Request()->body());
    EXPECT_TRUE(parsed.ok());
    size_t reused = (*parsed)->reused_messages();
    EXPECT_TRUE(manager.Apply("local", "s", *parsed, 1).ok());
    return reused;
  };
  for (size_t budget : {size_t{256} << 20, size_t{64}}) {
    Fixture f;
    ContextManagerOptions options;
    options.max_kept_request_bytes = budget;
    ContextManager manager(options, f.store, f.scrubber, f.counter, nullptr);
    Conversation c;
    c.Assistant(json::array({Use("t1", "Read")}));
    c.User(json::array({Result("t1", std::string(500, 'r'))}));
    EXPECT_EQ(round(manager, c), 0u);
    c.Assistant(json::array({{{"type", "text"}, {"text", "next"}}}));
    c.User(json::array({{{"type", "text"}, {"text", "go"}}}));
    // With room, the unchanged messages are taken over; with 64 bytes nothing was kept.
    EXPECT_EQ(round(manager, c), budget > 64 ? 2u : 0u);
  }
}

TEST(ContextManagerTest, SideRequestsOfOneSessionAreSeparateThreads) {
  Fixture f;
  Conversation main;
  Conversation side("write a title for: task");
  AppliedRequest a = f.Apply(main);
  AppliedRequest b = f.Apply(side);
  EXPECT_EQ(a.key.conversation, b.key.conversation);
  EXPECT_NE(a.key.thread, b.key.thread);
}

// Every value the conversation store holds for `key`, joined.
std::string StoredValues(Fixture& f, const ConversationKey& key) {
  auto state = f.store.Load(key);
  EXPECT_TRUE(state.ok() && state->has_value());
  std::string all;
  if (state.ok() && state->has_value()) {
    for (const Rewrite& r : (*state)->rewrites) all += r.key + "\n" + r.value + "\n";
    for (const std::string& h : (*state)->frontier) all += h + "\n";
  }
  return all;
}

// A redacted block holding <private> text: the model receives the span (its secret redacted),
// the store keeps only the redactions and a digest, and the block is repeated byte for byte
// after a restart, also with rules that changed.
TEST(ContextManagerTest, PrivateTextReachesTheModelButNotTheStore) {
  Fixture f;
  auto rules = scrub::BuildScrubber(scrub::ScrubConfig{});
  ASSERT_TRUE(rules.ok());
  auto manager = f.Make(**rules);
  const std::string inside = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";
  const std::string outside = "ghp_zB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";
  Conversation c;
  c.Assistant(json::array({Use("t1", "Read")}));
  c.User(json::array({Result(
      "t1", "cfg <private>PRIV-MARK-1 " + inside + "</private> and " + outside + " here")}));
  AppliedRequest first = f.Apply(c, manager.get());
  EXPECT_EQ(first.redactions_new, 1);
  const std::string sent =
      "cfg <private>PRIV-MARK-1 [REDACTED:github-pat:ghp_]</private> and "
      "[REDACTED:github-pat:ghp_] here";
  EXPECT_THAT(first.body, HasSubstr(sent));
  std::string stored = StoredValues(f, first.key);
  EXPECT_THAT(stored, Not(HasSubstr("PRIV-MARK")));
  EXPECT_THAT(stored, Not(HasSubstr("ghp_a")));
  EXPECT_THAT(stored, HasSubstr("#withheld-rewrite/1 "));

  // Restart, rules unchanged.
  auto restarted = f.Make(**rules);
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  AppliedRequest second = f.Apply(c, restarted.get());
  EXPECT_THAT(second.body, HasSubstr(sent));
  // Restart with rules that redact nothing: the stored redactions still apply.
  WordScrubber none("NOTHING");
  auto changed = f.Make(none);
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok2"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "more"}}}));
  AppliedRequest third = f.Apply(c, changed.get());
  EXPECT_THAT(third.body, HasSubstr(sent));
  EXPECT_THAT(third.body, Not(HasSubstr(inside)));
  const size_t prefix = second.body.find("\"next\"");
  ASSERT_NE(prefix, std::string::npos);
  EXPECT_EQ(third.body.substr(0, prefix), second.body.substr(0, prefix));
  EXPECT_THAT(StoredValues(f, first.key), Not(HasSubstr("PRIV-MARK")));
}

// With a scrubber whose markers cannot be aligned, the decision is rebuilt by scrubbing the
// original again, checked against the stored digest.
TEST(ContextManagerTest, PrivateBlocksOfAnotherScrubberAreRebuiltByScrubbingAgain) {
  Fixture f;
  Conversation c;
  c.Assistant(json::array({Use("t1", "Read")}));
  c.User(json::array({Result("t1", "x <private>PRIV-MARK-2 SECRET12</private> y")}));
  AppliedRequest first = f.Apply(c);
  const std::string sent = "x <private>PRIV-MARK-2 [REDACTED]</private> y";
  EXPECT_THAT(first.body, HasSubstr(sent));
  EXPECT_THAT(StoredValues(f, first.key), Not(HasSubstr("PRIV-MARK")));
  auto restarted = f.Make(f.scrubber);
  c.Assistant(json::array({{{"type", "text"}, {"text", "ok"}}}));
  c.User(json::array({{{"type", "text"}, {"text", "next"}}}));
  EXPECT_THAT(f.Apply(c, restarted.get()).body, HasSubstr(sent));
}

// A Chat Completions conversation grown as a client would (system prompt first).
class ChatConversation {
 public:
  ChatConversation() {
    messages_.push_back({{"role", "system"}, {"content", "You are a test."}});
    messages_.push_back({{"role", "user"}, {"content", "task"}});
  }
  void Calls(const std::vector<std::pair<std::string, std::string>>& calls) {
    json tool_calls = json::array();
    for (const auto& [id, name] : calls) {
      tool_calls.push_back(
          {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", "{}"}}}});
    }
    messages_.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", tool_calls}});
  }
  void Tool(const std::string& id, const std::string& text) {
    messages_.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", text}});
  }
  void Say(const std::string& role, const std::string& text) {
    messages_.push_back({{"role", role}, {"content", text}});
  }
  std::shared_ptr<ModelRequest> Request() const {
    json body = {{"model", "gpt-x"}, {"messages", messages_}, {"stream", true}};
    auto parsed = OpenAIChatRequest::Parse(body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return std::shared_ptr<ModelRequest>(*std::move(parsed));
  }

 private:
  json messages_ = json::array();
};

AppliedRequest ApplyChat(Fixture& f, const ChatConversation& c, ContextManager* m = nullptr) {
  ContextManager* target = m ? m : f.manager.get();
  auto applied = target->Apply("local", "", c.Request(), 1000);
  EXPECT_TRUE(applied.ok()) << applied.status();
  if (applied.ok()) target->SaveFrontier(*applied);
  return *std::move(applied);
}

TEST(ContextManagerChatTest, RedactsToolMessagesAndUserTextOnceAndRepeatsThem) {
  Fixture f;
  ChatConversation c;
  c.Calls({{"t1", "read"}});
  c.Tool("t1", "token SECRET123 here");
  AppliedRequest first = ApplyChat(f, c);
  EXPECT_EQ(first.redactions_new, 1);
  EXPECT_THAT(first.body, Not(HasSubstr("SECRET123")));
  const std::string redacted =
      R"({"role":"tool","tool_call_id":"t1","content":"token [REDACTED] here"})";
  EXPECT_THAT(first.body, HasSubstr(redacted));
  EXPECT_EQ(first.key.conversation, "m:" + first.key.thread);

  c.Say("assistant", "SECRET5 in the model's words stays");
  c.Say("user", "and SECRET77 typed");
  AppliedRequest second = ApplyChat(f, c);
  EXPECT_EQ(second.redactions_new, 1);
  EXPECT_EQ(second.new_messages, 2u);
  EXPECT_THAT(second.body, HasSubstr(redacted));
  EXPECT_THAT(second.body, HasSubstr("SECRET5 in the model's words stays"));
  EXPECT_THAT(second.body, HasSubstr(R"({"role":"user","content":"and [REDACTED] typed"})"));
  EXPECT_EQ(second.key, first.key);

  // After a restart with rules that redact nothing, the decisions stand.
  WordScrubber none("NOTHING");
  auto restarted = f.Make(none);
  c.Say("assistant", "ok");
  c.Say("user", "SECRET999 now");
  AppliedRequest third = ApplyChat(f, c, restarted.get());
  EXPECT_THAT(third.body, HasSubstr(redacted));
  EXPECT_THAT(third.body, HasSubstr("and [REDACTED] typed"));
  EXPECT_THAT(third.body, HasSubstr("SECRET999 now"));
  EXPECT_EQ(third.body.substr(0, second.body.rfind(']')),
            second.body.substr(0, second.body.rfind(']')));
}

TEST(ContextManagerChatTest, FoldsAReturnedBranchAndChargesItsSpan) {
  Fixture f;
  ChatConversation c;
  c.Calls({{"c1", "contextd__branch_create"}, {"r1", "read"}});
  c.Tool("c1", "{\"branch_id\":\"" + kBranch + "\"}");
  c.Tool("r1", std::string(4000, 'q'));
  f.facts = BranchFacts{kBranch, false, "active", "", "", 1000, 0, {}};
  AppliedRequest open = ApplyChat(f, c);
  EXPECT_EQ(open.open_branch_id, kBranch);
  EXPECT_GT(open.tokens_charged, 1000);  // the read's 4000 bytes, not contextd's own result
  EXPECT_THAT(f.labels, ::testing::ElementsAre("read"));

  c.Calls({{"ret", "contextd__branch_return"}});
  c.Tool("ret", "{}");
  f.facts = BranchFacts{kBranch, true, "completed", "", "the answer is 42", 1100, 1090, {}};
  AppliedRequest folded = ApplyChat(f, c);
  EXPECT_EQ(folded.folds_new, 1);
  EXPECT_FALSE(folded.fallback);
  EXPECT_THAT(folded.body, HasSubstr("the answer is 42"));
  EXPECT_THAT(folded.body, Not(HasSubstr("qqqq")));
  EXPECT_LT(folded.tokens_after, folded.tokens_before);
  json sent = json::parse(folded.body);
  ASSERT_EQ(sent["messages"].size(), 5u);
  EXPECT_EQ(sent["messages"][3]["tool_call_id"], "c1");
  EXPECT_EQ(sent["messages"][4]["tool_call_id"], "r1");

  // The same transcript folds to the same bytes after a restart, without the branch.
  f.facts.reset();
  auto restarted = f.Make(f.scrubber);
  c.Say("assistant", "done");
  c.Say("user", "thanks");
  AppliedRequest later = ApplyChat(f, c, restarted.get());
  EXPECT_EQ(later.folds_applied, 1);
  EXPECT_EQ(later.folds_new, 0);
  const std::string prefix = folded.body.substr(0, folded.body.rfind(']'));
  EXPECT_EQ(later.body.substr(0, prefix.size()), prefix);
}

TEST(ContextManagerChatTest, TheBudgetWarningIsAUserMessageAfterTheResults) {
  Fixture f;
  // The parent's history stays in view: the warning goes after the results, as sent.
  f.options.branch_view.view = BranchView::kInherited;
  f.manager = f.Make(f.scrubber);
  f.budget = 1000;
  ChatConversation c;
  c.Calls({{"c1", "contextd__branch_create"}, {"r1", "read"}});
  c.Tool("c1", "{\"branch_id\":\"" + kBranch + "\"}");
  c.Tool("r1", std::string(3400, 'w'));
  f.facts = BranchFacts{kBranch, false, "active", "", "", 0, 0, {}};
  AppliedRequest warned = ApplyChat(f, c);
  ASSERT_TRUE(warned.warned);
  json sent = json::parse(warned.body);
  EXPECT_EQ(sent["messages"].back()["role"], "user");
  EXPECT_EQ(sent["messages"].back()["content"][0]["text"],
            "[contextd] budget 80% used in " + kBranch);
  // Repeated at its place on the next request.
  c.Say("assistant", "reading on");
  c.Say("user", "<system-reminder>x</system-reminder>");
  AppliedRequest next = ApplyChat(f, c);
  EXPECT_FALSE(next.warned);
  EXPECT_EQ(next.body.substr(0, warned.body.rfind(']')),
            warned.body.substr(0, warned.body.rfind(']')));
}

}  // namespace
}  // namespace contextd::model
