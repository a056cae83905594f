#include "model/auto_fold.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/context_manager.h"
#include "model/openai_chat_request.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/in_memory_conversation_store.h"
#include "model/testing/simple_parts.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// ---- The planner, on hand-built transcripts ----

Block Call(const std::string& id, const std::string& tool = "Read") {
  Block b;
  b.kind = BlockKind::kToolCall;
  b.call_id = id;
  b.tool_name = tool;
  return b;
}
Block Result(const std::string& id) {
  Block b;
  b.kind = BlockKind::kToolResult;
  b.call_id = id;
  return b;
}
Message Turn(Role role, std::vector<Block> blocks) { return Message{role, std::move(blocks), ""}; }

// user task, then n (assistant call c<i>, user result c<i>) pairs.
Transcript Calls(int n) {
  Transcript t;
  Block text;
  text.kind = BlockKind::kText;
  t.messages.push_back(Turn(Role::kUser, {text}));
  for (int i = 0; i < n; ++i) {
    t.messages.push_back(Turn(Role::kAssistant, {Call("c" + std::to_string(i))}));
    t.messages.push_back(Turn(Role::kUser, {Result("c" + std::to_string(i))}));
  }
  return t;
}

AutoFoldContext Context(const Transcript& t, int64_t input, int64_t per_result = 1000) {
  AutoFoldContext c;
  c.input_tokens = input;
  c.removed.assign(t.messages.size(), false);
  c.tokens = [per_result](size_t, size_t) { return per_result; };
  c.foldable = [](size_t, size_t) { return true; };
  c.handle_tokens = 50;
  return c;
}

AutoFoldOptions Options() {
  AutoFoldOptions o;
  o.enabled = true;
  o.trigger_tokens = 5000;
  o.keep = 3;
  o.min_result_tokens = 100;
  o.clear_at_least = 1500;
  o.expected_requests = 1000;  // the bill pays, unless a test says otherwise
  return o;
}

// The messages of a step's picks or drops, in order.
template <typename Item>
std::vector<size_t> MessagesOf(const std::vector<Item>& items) {
  std::vector<size_t> out;
  for (const Item& item : items) out.push_back(item.message);
  return out;
}

TEST(PlanAutoFold, NothingUnderTheTrigger) {
  Transcript t = Calls(8);
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 5000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kBelowTrigger);
  EXPECT_TRUE(step.picks.empty());
}

TEST(PlanAutoFold, FoldsEveryResultOlderThanTheLastKeepCalls) {
  Transcript t = Calls(6);  // results at messages 2, 4, ..., 12
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 9000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kFolded);
  EXPECT_EQ(MessagesOf(step.picks), (std::vector<size_t>{2, 4, 6}));
  EXPECT_EQ(step.tokens_folded, 3000);
  EXPECT_EQ(step.picks[0].call_message, 1u);
}

TEST(PlanAutoFold, WaitsUntilTheStepIsWorthARewrite) {
  Transcript t = Calls(4);  // one result older than the last 3: 950 tokens saved < 1500
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 9000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kBelowClearAtLeast);
  EXPECT_TRUE(step.picks.empty());
  t = Calls(5);  // two: 1900
  EXPECT_EQ(PlanAutoFold(t, Options(), Context(t, 9000)).picks.size(), 2u);
}

TEST(PlanAutoFold, SmallRemovedUnfoldableAndOwnToolResultsStay) {
  Transcript t = Calls(8);
  t.messages[3].blocks[0].tool_name = "mcp__contextd__trail_unfold";  // call c1
  t.messages[3].blocks[0].contextd_tool = "trail_unfold";
  AutoFoldContext c = Context(t, 9000);
  c.removed[6] = true;  // c2's result: inside a folded branch
  c.tokens = [](size_t m, size_t) -> int64_t { return m == 8 ? 99 : 1000; };  // c3's is small
  c.foldable = [](size_t m, size_t) { return m != 10; };                      // c4's is not
  // Only c0's result (message 2) is a candidate, and alone it does not reach clear_at_least.
  AutoFoldStep step = PlanAutoFold(t, Options(), c);
  EXPECT_TRUE(step.picks.empty());
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kBelowClearAtLeast);
  AutoFoldOptions low = Options();
  low.clear_at_least = 100;
  EXPECT_EQ(MessagesOf(PlanAutoFold(t, low, c).picks), (std::vector<size_t>{2}));
}

TEST(PlanAutoFold, TheFoldPointOnlyMovesForward) {
  Transcript t = Calls(8);
  AutoFoldContext c = Context(t, 9000);
  c.first_message = 7;  // results up to message 6 were decided by an earlier step
  EXPECT_EQ(MessagesOf(PlanAutoFold(t, Options(), c).picks), (std::vector<size_t>{8, 10}));
}

Block Thinking() {
  Block b;
  b.kind = BlockKind::kThinking;
  return b;
}

TEST(PlanAutoFold, InModeWaitNeverFoldsAResultThatAThinkingBlockFollows) {
  Transcript t = Calls(8);
  Block thinking = Thinking();
  // The assistant turn after c4's result (message 10) thinks: results 2..10 are bound under it.
  t.messages[11].blocks.insert(t.messages[11].blocks.begin(), thinking);
  AutoFoldOptions o = Options();
  o.keep = 1;
  o.thinking = "wait";
  AutoFoldStep step = PlanAutoFold(t, o, Context(t, 9000));
  EXPECT_EQ(MessagesOf(step.picks), (std::vector<size_t>{12, 14}));
  // When only the bound results would make a step, the outcome says why nothing folded.
  t.messages[15].blocks.insert(t.messages[15].blocks.begin(), thinking);
  step = PlanAutoFold(t, o, Context(t, 9000));
  EXPECT_TRUE(step.picks.empty());
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kThinking);
}

// Calls(n) with a thinking block opening every assistant turn, then the model's answer (thinking,
// text) and a new user turn (text, and a mid-conversation system message after it).
Transcript ThinkingSession(int n, bool new_turn) {
  Transcript t = Calls(n);
  for (Message& m : t.messages) {
    if (m.role == Role::kAssistant) m.blocks.insert(m.blocks.begin(), Thinking());
  }
  if (!new_turn) return t;
  Block text;
  text.kind = BlockKind::kText;
  t.messages.push_back(Turn(Role::kAssistant, {Thinking(), text}));
  t.messages.push_back(Turn(Role::kUser, {text}));
  t.messages.push_back(Turn(Role::kSystem, {text}));
  return t;
}

TEST(PlanAutoFold, AtANewUserTurnRemovesTheThinkingAfterTheFoldPoint) {
  Transcript t = ThinkingSession(6, /*new_turn=*/true);  // results at 2..12, answer at 13
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 9000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kFolded);
  EXPECT_EQ(MessagesOf(step.picks), (std::vector<size_t>{2, 4, 6}));
  // Every thinking block after the first pick goes, the one before it stays: the kept thinking
  // is a leading run of the conversation's, and its prefix did not change.
  EXPECT_EQ(MessagesOf(step.drops), (std::vector<size_t>{3, 5, 7, 9, 11, 13}));
  // What is already left out binds nothing and is not removed twice.
  AutoFoldContext c = Context(t, 9000);
  c.sent = [](size_t m, size_t) { return m < 5; };
  EXPECT_EQ(MessagesOf(PlanAutoFold(t, Options(), c).drops), (std::vector<size_t>{3}));
}

TEST(PlanAutoFold, AtANewUserTurnUnderThinkingTheTriggerLooksAhead) {
  Transcript t = ThinkingSession(6, /*new_turn=*/true);
  AutoFoldContext c = Context(t, 2600);  // under the trigger (5000), expected to pass it: 2 x 2600
  EXPECT_EQ(PlanAutoFold(t, Options(), c).outcome, AutoFoldOutcome::kFolded);
  c.input_tokens = 2500;  // not expected to
  EXPECT_EQ(PlanAutoFold(t, Options(), c).outcome, AutoFoldOutcome::kBelowTrigger);
  // Without thinking a step can be taken when the trigger is passed: no look-ahead.
  Transcript plain = Calls(6);
  EXPECT_EQ(PlanAutoFold(plain, Options(), Context(plain, 2600)).outcome,
            AutoFoldOutcome::kBelowTrigger);
}

TEST(PlanAutoFold, WaitsWhileAToolLoopIsInFlight) {
  // The provider requires the thinking of the turn in flight: no step until the turn ends.
  Transcript t = ThinkingSession(6, /*new_turn=*/false);
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 9000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kToolLoop);
  EXPECT_TRUE(step.picks.empty());
  EXPECT_TRUE(step.drops.empty());
  EXPECT_FALSE(EndsWithUserTurn(t));
  EXPECT_TRUE(EndsWithUserTurn(ThinkingSession(6, true)));
}

TEST(PlanAutoFold, ModeOffLeavesAThinkingConversationAlone) {
  Transcript t = ThinkingSession(6, /*new_turn=*/true);
  AutoFoldOptions o = Options();
  o.thinking = "off";
  AutoFoldStep step = PlanAutoFold(t, o, Context(t, 9000));
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kThinking);
  EXPECT_TRUE(step.picks.empty());
  o.thinking = "wait";
  EXPECT_EQ(PlanAutoFold(t, o, Context(t, 9000)).outcome, AutoFoldOutcome::kThinking);
  // Without thinking, off and wait fold as remove does.
  Transcript plain = Calls(6);
  EXPECT_EQ(MessagesOf(PlanAutoFold(plain, o, Context(plain, 9000)).picks),
            (std::vector<size_t>{2, 4, 6}));
}

TEST(PlanAutoFold, NeverLeavesATurnWithNothingInIt) {
  Transcript t = ThinkingSession(6, /*new_turn=*/true);
  t.messages[9].blocks.erase(t.messages[9].blocks.begin() + 1);  // a turn that only thought
  t.messages[10].blocks.clear();
  Block text;
  text.kind = BlockKind::kText;
  t.messages[10].blocks.push_back(text);
  AutoFoldStep step = PlanAutoFold(t, Options(), Context(t, 9000));
  EXPECT_TRUE(step.picks.empty());
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kThinking);
}

TEST(PlanAutoFold, StepsOnlyWhenTheRequestsAfterItSaveMoreThanItCosts) {
  Transcript t = Calls(6);  // 6 model turns; the step saves 3 x 950 tokens
  // 40,000 tokens of messages: re-written at 1.25 (37,150 after the step) instead of read at 0.1
  // costs 42,437 more now; each later request reads 285 less.
  AutoFoldContext c = Context(t, 40'000);
  AutoFoldOptions o = Options();
  o.expected_requests = 0;  // estimated: as many as the 6 model turns so far
  AutoFoldStep step = PlanAutoFold(t, o, c);
  EXPECT_EQ(step.outcome, AutoFoldOutcome::kBelowPayback);
  EXPECT_TRUE(step.picks.empty());
  o.expected_requests = 149;  // 149 x 285 = 42,465: pays
  EXPECT_EQ(PlanAutoFold(t, o, c).outcome, AutoFoldOutcome::kFolded);
  o.expected_requests = 148;
  EXPECT_EQ(PlanAutoFold(t, o, c).outcome, AutoFoldOutcome::kBelowPayback);
  // Short messages cost little to re-write: a step pays at once.
  o.expected_requests = 0;
  o.trigger_tokens = 1000;
  EXPECT_EQ(PlanAutoFold(t, o, Context(t, 3'000)).outcome, AutoFoldOutcome::kFolded);
}

TEST(AutoFoldHandle, NamesTheTokensTheCallAndTheTrailEvent) {
  EXPECT_EQ(AutoFoldHandle(4210, "Read /src/app.py", "ses_1", 12),
            "[contextd: 4,210 tokens of Read /src/app.py folded; trail_unfold "
            "{\"scope_id\":\"ses_1\",\"event\":12}]");
  EXPECT_EQ(AutoFoldHandle(1234567, "x", "a\"b", 1),
            "[contextd: 1,234,567 tokens of x folded; trail_unfold "
            "{\"scope_id\":\"a\\\"b\",\"event\":1}]");
}

TEST(CallGist, PicksWhatTheCallRead) {
  EXPECT_EQ(CallGist("Read", R"({"limit":10,"file_path":"/src/app.py"})"), "Read /src/app.py");
  EXPECT_EQ(CallGist("Bash", R"({"description":"list","command":"ls  -la\n /tmp"})"),
            "Bash ls -la /tmp");
  EXPECT_EQ(CallGist("shell", R"({"command":["bash","-lc","cat x"]})"), "shell bash -lc cat x");
  EXPECT_EQ(CallGist("mystery", R"({"n":1,"what":"thing"})"), "mystery thing");
  EXPECT_EQ(CallGist("broken", "{not json"), "broken");
  EXPECT_EQ(CallGist("Read", R"({"file_path":"abcdefghij"})", 4), "Read abcd...");
  // Cut at a character, not inside one.
  EXPECT_EQ(CallGist("Read", R"({"file_path":"ééééé"})", 2), "Read éé...");
}

// ---- Through the context manager ----

// Counts bytes / 4.
using testing::ByteCounter;

using testing::WordScrubber;

json Msg(const std::string& role, json content) { return {{"role", role}, {"content", content}}; }

// A Claude-like conversation: each step a Read call and its result (`size` bytes).
class Session {
 public:
  Session() { messages_.push_back(Msg("user", json::array({{{"type", "text"}, {"text", "go"}}}))); }
  void Step(const std::string& text, bool thinking = false) {
    std::string id = "toolu_" + std::to_string(n_++);
    json content = json::array();
    if (thinking) content.push_back(ThinkingBlock());
    content.push_back({{"type", "tool_use"},
                       {"id", id},
                       {"name", "Read"},
                       {"input", {{"file_path", "/src/f" + std::to_string(n_) + ".py"}}}});
    messages_.push_back(Msg("assistant", content));
    messages_.push_back(Msg(
        "user", json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}}})));
  }
  // The model's answer to the task (a turn that thinks, then says) and the person's next task.
  void Answer(const std::string& text) {
    messages_.push_back(
        Msg("assistant", json::array({ThinkingBlock(), {{"type", "text"}, {"text", text}}})));
  }
  void Ask(const std::string& text) {
    messages_.push_back(Msg("user", json::array({{{"type", "text"}, {"text", text}}})));
  }
  std::string Body() const {
    json messages = messages_;
    messages.back()["content"].back()["cache_control"] = {{"type", "ephemeral"}};
    return json{{"model", "m"}, {"max_tokens", 10}, {"messages", messages}}.dump();
  }

  const json& messages() const { return messages_; }

 private:
  // Each signed for the prefix it was made after, as the provider's are: no two alike.
  json ThinkingBlock() {
    ++thoughts_;
    return {{"type", "thinking"},
            {"thinking", "hmm " + std::to_string(thoughts_)},
            {"signature", "sig" + std::to_string(thoughts_)}};
  }

  json messages_ = json::array();
  int n_ = 0;
  int thoughts_ = 0;
};

struct Manager {
  model::testing::InMemoryConversationStore store;
  ByteCounter counter;
  WordScrubber scrubber;
  std::vector<ModelToolCall> archived;
  bool archive_fails = false;
  int64_t expected_requests = 100;  // the bill always pays, unless a test says otherwise
  // Knows no branch; keeps every result in `archived` unless archive_fails.
  model::testing::FakeBranchLedger ledger{
      nullptr, nullptr, nullptr,
      [this](const folding::SessionKey&, const std::vector<ModelToolCall>& calls) {
        std::vector<std::optional<TrailRef>> refs;
        for (const ModelToolCall& call : calls) {
          if (archive_fails) {
            refs.push_back(std::nullopt);
            continue;
          }
          archived.push_back(call);
          refs.push_back(TrailRef{"ses_test", static_cast<int64_t>(archived.size()) * 2});
        }
        return refs;
      }};
  std::unique_ptr<ContextManager> manager = Make();

  std::unique_ptr<ContextManager> Make() {
    ContextManagerOptions options;
    options.auto_fold.enabled = true;
    options.auto_fold.trigger_tokens = 600;
    options.auto_fold.keep = 2;
    options.auto_fold.min_result_tokens = 50;
    options.auto_fold.clear_at_least = 150;
    options.auto_fold.expected_requests = expected_requests;
    return std::make_unique<ContextManager>(options, store, scrubber, counter, &ledger);
  }
  AppliedRequest Apply(ModelApi api, const std::string& body, std::optional<bool> on = {}) {
    const std::string session = api == ModelApi::kAnthropicMessages ? "s1" : "";
    auto parsed = manager->Parse(api, "local", session, body);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    auto applied = manager->Apply("local", session, *parsed, 1000, on);
    EXPECT_TRUE(applied.ok()) << applied.status();
    manager->SaveFrontier(*applied);
    return *std::move(applied);
  }
};

std::string Payload(char c, const std::string& extra = "") {
  return extra + std::string(400, c);  // 100 tokens
}

json Messages(const std::string& body) { return json::parse(body)["messages"]; }

TEST(AutoFold, FoldsStaleResultsIntoHandlesAndRepeatsThem) {
  Manager m;
  Session s;
  s.Step(Payload('a', "SECRET "));
  s.Step(Payload('b'));
  s.Step(Payload('c'));
  AppliedRequest first = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(first.auto_fold_outcome, "below_trigger");
  EXPECT_EQ(first.auto_folds_applied, 0);
  s.Step(Payload('d'));
  s.Step(Payload('e'));
  s.Step(Payload('f'));
  AppliedRequest second = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(second.auto_fold_outcome, "folded");
  EXPECT_EQ(second.auto_folds_new, 4);  // a..d; e and f answer the last 2 calls
  EXPECT_LT(second.tokens_after, second.tokens_before - 300);
  json sent = Messages(second.body);
  std::string a = sent[2]["content"][0]["content"].get<std::string>();
  EXPECT_THAT(a, StartsWith("[contextd: 10"));
  EXPECT_THAT(a, HasSubstr("tokens of Read /src/f1.py folded; trail_unfold "
                           "{\"scope_id\":\"ses_test\",\"event\":2}]"));
  EXPECT_EQ(sent[2]["content"][0]["tool_use_id"], "toolu_0");
  EXPECT_EQ(sent[12]["content"][0]["content"], Payload('f'));
  EXPECT_EQ(sent[10]["content"][0]["content"], Payload('e'));
  // The trail got the results scrubbed.
  ASSERT_EQ(m.archived.size(), 4u);
  EXPECT_EQ(m.archived[0].result, "[REDACTED] " + std::string(400, 'a'));
  EXPECT_EQ(m.archived[0].tool, "Read");

  // The trigger counts what goes out: the folded request is under it again, so the next one
  // only repeats the step; the folded prefix goes out as before.
  s.Step(Payload('g'));
  AppliedRequest third = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(third.auto_fold_outcome, "below_trigger");
  EXPECT_EQ(third.auto_folds_applied, 4);
  json again = Messages(third.body);
  for (size_t i = 0; i + 1 < sent.size(); ++i) EXPECT_EQ(again[i], sent[i]) << i;

  // A restart: the decisions come back from the store, byte for byte.
  m.manager = m.Make();
  AppliedRequest restarted = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(restarted.body, third.body);
  EXPECT_EQ(restarted.auto_folds_new, 0);
}

TEST(AutoFold, AStepMovesTheFoldPointForwardOnly) {
  Manager m;
  Session s;
  for (char c : std::string("abcdef")) s.Step(Payload(c));
  AppliedRequest first = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  ASSERT_EQ(first.auto_folds_new, 4);
  for (char c : std::string("ghij")) s.Step(Payload(c));
  AppliedRequest second = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(second.auto_folds_new, 4);  // e..h
  json before = Messages(first.body);
  json after = Messages(second.body);
  // Everything up to the first result of the new step is as the previous request sent it.
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(after[i], before[i]) << i;
  EXPECT_THAT(after[10]["content"][0]["content"].get<std::string>(), StartsWith("[contextd: "));
}

TEST(AutoFold, OffByHeaderStillRepeatsWhatWasDecided) {
  Manager m;
  Session s;
  for (char c : std::string("abcdef")) s.Step(Payload(c));
  AppliedRequest first = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  ASSERT_EQ(first.auto_folds_new, 4);
  for (char c : std::string("ghij")) s.Step(Payload(c));
  AppliedRequest off = m.Apply(ModelApi::kAnthropicMessages, s.Body(), false);
  EXPECT_EQ(off.auto_fold_outcome, "");
  EXPECT_EQ(off.auto_folds_new, 0);
  EXPECT_EQ(off.auto_folds_applied, 4);
  json sent = Messages(off.body);
  EXPECT_THAT(sent[2]["content"][0]["content"].get<std::string>(), StartsWith("[contextd: "));
  EXPECT_EQ(sent[10]["content"][0]["content"], Payload('e'));
}

TEST(AutoFold, AResultTheTrailCouldNotKeepStays) {
  Manager m;
  m.archive_fails = true;
  Session s;
  for (char c : std::string("abcdef")) s.Step(Payload(c));
  AppliedRequest applied = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(applied.auto_folds_new, 0);
  EXPECT_EQ(applied.body, s.Body());
}

TEST(AutoFold, ThinkingBlocksBindWhatComesBeforeThem) {
  Manager m;
  Session s;
  for (char c : std::string("abcdef")) s.Step(Payload(c), /*thinking=*/true);
  AppliedRequest applied = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(applied.auto_fold_outcome, "tool_loop");
  EXPECT_EQ(applied.auto_folds_new, 0);
  EXPECT_EQ(applied.body, s.Body());
}

// The thinking blocks of `messages`, by message index.
std::vector<size_t> ThinkingAt(const json& messages) {
  std::vector<size_t> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    for (const json& block : messages[i]["content"]) {
      if (block.is_object() && block.value("type", "") == "thinking") out.push_back(i);
    }
  }
  return out;
}

TEST(AutoFold, AThinkingModelFoldsAtANewUserTurnWithoutTheThinkingAfterTheFoldPoint) {
  Manager m;
  Session s;
  for (char c : std::string("abcdef")) s.Step(Payload(c), /*thinking=*/true);
  ASSERT_EQ(m.Apply(ModelApi::kAnthropicMessages, s.Body()).auto_fold_outcome, "tool_loop");
  s.Answer("Done: the bug is in f3.");
  s.Ask("Now fix it.");
  AppliedRequest step = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_EQ(step.auto_fold_outcome, "folded");
  EXPECT_EQ(step.auto_folds_new, 4);  // a..d, at messages 2..8
  // Thinking in messages 3..13 (the calls of b..f, the answer) goes; message 1's stays.
  EXPECT_EQ(step.thinking_removed, 6);
  json sent = Messages(step.body);
  EXPECT_EQ(ThinkingAt(sent), (std::vector<size_t>{1}));
  EXPECT_EQ(sent[1], s.messages()[1]);
  EXPECT_EQ(sent[13]["content"].size(), 1u);
  EXPECT_EQ(sent[13]["content"][0]["text"], "Done: the bug is in f3.");
  EXPECT_LT(step.tokens_after, step.tokens_before - 300);

  // The model goes on thinking in its new turn: those blocks are kept, what was removed stays
  // removed, and every later request is the previous one plus its tail.
  s.Step(Payload('g'), /*thinking=*/true);
  s.Step(Payload('h'), /*thinking=*/true);
  AppliedRequest next = m.Apply(ModelApi::kAnthropicMessages, s.Body());
  EXPECT_NE(next.auto_fold_outcome, "folded");
  EXPECT_EQ(next.thinking_removed, 0);
  json again = Messages(next.body);
  for (size_t i = 0; i + 1 < sent.size(); ++i) EXPECT_EQ(again[i], sent[i]) << i;
  EXPECT_EQ(ThinkingAt(again), (std::vector<size_t>{1, 15, 17}));
  // After a restart, from the store, byte for byte.
  m.manager = m.Make();
  EXPECT_EQ(m.Apply(ModelApi::kAnthropicMessages, s.Body()).body, next.body);
}

TEST(AutoFold, ThinkingModesWaitAndOffRemoveNothing) {
  for (const char* mode : {"wait", "off"}) {
    Manager m;
    ContextManagerOptions options;
    options.auto_fold = {true, 600, 2, 50, 150};
    options.auto_fold.expected_requests = 100;
    options.auto_fold.thinking = mode;
    m.manager =
        std::make_unique<ContextManager>(options, m.store, m.scrubber, m.counter, &m.ledger);
    Session s;
    for (char c : std::string("abcdef")) s.Step(Payload(c), /*thinking=*/true);
    s.Answer("Done.");
    s.Ask("Next.");
    AppliedRequest applied = m.Apply(ModelApi::kAnthropicMessages, s.Body());
    EXPECT_EQ(applied.auto_fold_outcome, "thinking") << mode;
    EXPECT_EQ(applied.body, s.Body()) << mode;
  }
}

TEST(AutoFold, ChatCompletionsFoldTheSameWay) {
  Manager m;
  json messages = json::array(
      {{{"role", "system"}, {"content", "sys"}}, {{"role", "user"}, {"content", "go"}}});
  for (int i = 0; i < 6; ++i) {
    std::string id = "call_" + std::to_string(i);
    messages.push_back(
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          json::array(
              {{{"id", id},
                {"type", "function"},
                {"function", {{"name", "bash"}, {"arguments", "{\"command\":\"cat f\"}"}}}}})}});
    messages.push_back(
        {{"role", "tool"}, {"tool_call_id", id}, {"content", Payload(static_cast<char>('a' + i))}});
  }
  std::string body = json{{"model", "gpt"}, {"messages", messages}}.dump();
  AppliedRequest applied = m.Apply(ModelApi::kOpenAIChat, body);
  EXPECT_EQ(applied.auto_folds_new, 4);
  json sent = json::parse(applied.body)["messages"];
  EXPECT_EQ(sent[3]["tool_call_id"], "call_0");
  EXPECT_THAT(sent[3]["content"].get<std::string>(),
              StartsWith("[contextd: 100 tokens of bash cat f folded; trail_unfold "));
  EXPECT_EQ(sent[13]["content"], Payload('f'));
}

TEST(AutoFold, ResponsesFoldTheSameWayAndLeaveReasoningAlone) {
  Manager m;
  json input = json::array({{{"type", "message"}, {"role", "user"}, {"content", "go"}}});
  for (int i = 0; i < 6; ++i) {
    std::string id = "call_" + std::to_string(i);
    input.push_back({{"type", "function_call"},
                     {"call_id", id},
                     {"name", "shell"},
                     {"arguments", "{\"command\":[\"bash\",\"-lc\",\"cat f\"]}"}});
    input.push_back({{"type", "function_call_output"},
                     {"call_id", id},
                     {"output", Payload(static_cast<char>('a' + i))}});
  }
  std::string body = json{{"model", "gpt"}, {"input", input}}.dump();
  AppliedRequest applied = m.Apply(ModelApi::kOpenAIResponses, body);
  EXPECT_EQ(applied.auto_folds_new, 4);
  json sent = json::parse(applied.body)["input"];
  EXPECT_EQ(sent[2]["call_id"], "call_0");
  EXPECT_THAT(sent[2]["output"].get<std::string>(),
              StartsWith("[contextd: 100 tokens of shell bash -lc cat f folded; trail_unfold "));
  EXPECT_EQ(sent[12]["output"], Payload('f'));

  // A reasoning item after the results binds them (treated as a thinking block): no step.
  Manager thinking;
  json reasoned = input;
  reasoned.push_back({{"type", "reasoning"},
                      {"id", "rs_1"},
                      {"summary", json::array()},
                      {"encrypted_content", "gAAAA"}});
  reasoned.push_back(
      {{"type", "function_call"}, {"call_id", "call_9"}, {"name", "shell"}, {"arguments", "{}"}});
  reasoned.push_back({{"type", "function_call_output"}, {"call_id", "call_9"}, {"output", "x"}});
  std::string reasoned_body = json{{"model", "gpt"}, {"input", reasoned}}.dump();
  AppliedRequest held = thinking.Apply(ModelApi::kOpenAIResponses, reasoned_body);
  EXPECT_EQ(held.auto_fold_outcome, "tool_loop");
  EXPECT_EQ(held.body, reasoned_body);
  // An operator whose provider does not bind reasoning items says so: they fold.
  model::testing::FakeBranchLedger keeps_all(
      nullptr, nullptr, nullptr,
      [](const folding::SessionKey&, const std::vector<ModelToolCall>& calls) {
        return std::vector<std::optional<TrailRef>>(calls.size(), TrailRef{"ses_x", 1});
      });
  Manager unbound;
  ContextManagerOptions options;
  options.auto_fold = {true, 600, 2, 50, 150, /*reasoning_items_bound=*/false};
  options.auto_fold.expected_requests = 100;
  unbound.manager = std::make_unique<ContextManager>(options, unbound.store, unbound.scrubber,
                                                     unbound.counter, &keeps_all);
  AppliedRequest folded = unbound.Apply(ModelApi::kOpenAIResponses, reasoned_body);
  EXPECT_EQ(folded.auto_fold_outcome, "folded");
  EXPECT_EQ(folded.auto_folds_new, 5);
  EXPECT_NE(folded.body.find("\"encrypted_content\":\"gAAAA\""), std::string::npos);

  // At a new user turn the step removes the reasoning items after its fold point, as it removes
  // Claude's thinking (the provider drops them anyway behind a changed prefix).
  Manager at_turn;
  json turn = reasoned;
  turn.push_back({{"type", "reasoning"},
                  {"id", "rs_2"},
                  {"summary", json::array()},
                  {"encrypted_content", "gBBBB"}});
  turn.push_back({{"type", "message"},
                  {"role", "assistant"},
                  {"content", json::array({{{"type", "output_text"}, {"text", "done"}}})}});
  turn.push_back({{"type", "message"}, {"role", "user"}, {"content", "next"}});
  AppliedRequest removed =
      at_turn.Apply(ModelApi::kOpenAIResponses, json{{"model", "gpt"}, {"input", turn}}.dump());
  EXPECT_EQ(removed.auto_fold_outcome, "folded");
  EXPECT_EQ(removed.thinking_removed, 2);
  json out = json::parse(removed.body)["input"];
  EXPECT_EQ(out.size(), turn.size() - 2);
  for (const json& item : out) EXPECT_NE(item["type"], "reasoning");
  EXPECT_EQ(out.back()["content"], "next");
}

}  // namespace
}  // namespace contextd::model
