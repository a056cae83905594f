// The isolated branch view through ContextManager (branch_view.h): what the provider receives
// while a branch is open, after it returns, nested, force-returned, after a restart, and with the
// view switched off, for Messages and Chat Completions.
#include <map>
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

const std::string kOuter = "br_000000000000000000000000000000a1";
const std::string kInner = "br_000000000000000000000000000000b2";

using testing::ByteCounter;
using testing::WordScrubber;

json Msg(const std::string& role, json content) { return {{"role", role}, {"content", content}}; }
json Text(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
json Result(const std::string& id, const std::string& text) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}};
}
json Use(const std::string& id, const std::string& name, json input = json::object()) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}};
}
json Create(const std::string& id, const std::string& prompt) {
  return Use(id, "mcp__contextd__branch_create",
             {{"description", "look into it"}, {"prompt", prompt}});
}
std::string Created(const std::string& branch) { return "{\"branch_id\":\"" + branch + "\"}"; }

// Many branches, each active until the test ends it; charges count against `budget` each.
struct Fixture {
  model::testing::InMemoryConversationStore store;
  ByteCounter counter;
  WordScrubber scrubber;
  std::map<std::string, BranchFacts> branches;
  std::map<std::string, int64_t> charged;
  int64_t budget = 1'000'000;
  model::testing::FakeBranchLedger ledger{
      [this](const std::string&, const std::string& id) -> std::optional<BranchFacts> {
        auto it = branches.find(id);
        if (it == branches.end()) return std::nullopt;
        return it->second;
      },
      [this](const std::string&, const std::string& id, const std::string&, const std::string&,
             int64_t tokens) -> std::optional<folding::BranchCharge> {
        BranchFacts& facts = branches.at(id);
        if (facts.ended) return std::nullopt;
        folding::BranchCharge out;
        if ((charged[id] += tokens) > budget) {
          facts.ended = true;
          facts.status = "budget_exhausted";
          facts.finish_reason = "budget exhausted";
          facts.summary = "partial";
          out.outcome.exhausted = true;
        }
        return out;
      }};
  ContextManagerOptions options;
  std::unique_ptr<ContextManager> manager = Make();

  std::unique_ptr<ContextManager> Make() {
    return std::make_unique<ContextManager>(options, store, scrubber, counter, &ledger);
  }
  void Open(const std::string& id) {
    BranchFacts facts;
    facts.branch_id = id;
    facts.status = "active";
    branches[id] = facts;
  }
  void Return(const std::string& id, const std::string& summary) {
    BranchFacts facts;
    facts.branch_id = id;
    facts.ended = true;
    facts.status = "completed";
    facts.summary = summary;
    facts.tokens_used = 100;
    facts.tokens_folded = 90;
    branches[id] = facts;
  }
  // `tools`: whether the request offers tools (an agent's loop does; a summary request may not).
  AppliedRequest Apply(const json& messages, ContextManager* m = nullptr, bool tools = true) {
    json sent = messages;
    sent.back()["content"].back()["cache_control"] = {{"type", "ephemeral"}};
    json body = {{"model", "m"}, {"max_tokens", 10}, {"system", "sys"}, {"messages", sent}};
    if (tools) body["tools"] = json::array({{{"name", "Read"}, {"input_schema", json::object()}}});
    auto parsed = AnthropicRequest::Parse(body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    std::shared_ptr<ModelRequest> request = *std::move(parsed);
    ContextManager* target = m != nullptr ? m : manager.get();
    auto applied = target->Apply("local", "session-1", request, 1000);
    EXPECT_TRUE(applied.ok()) << applied.status();
    if (applied.ok()) target->SaveFrontier(*applied);
    return *std::move(applied);
  }
};

// The parent reads PARENT_FILE, then opens a branch beside a read of BRANCH_FILE.
json ParentThenBranch() {
  json m = json::array();
  m.push_back(Msg("user", json::array({Text("the task: fix the parser")})));
  m.push_back(Msg("assistant", json::array({Use("p1", "Read")})));
  m.push_back(Msg("user", json::array({Result("p1", "PARENT_FILE " + std::string(2000, 'p'))})));
  m.push_back(
      Msg("assistant", json::array({Create("c1", "find the bug in lexer.cc"), Use("r1", "Read")})));
  m.push_back(Msg("user", json::array({Result("c1", Created(kOuter)),
                                       Result("r1", "BRANCH_FILE SECRET42 contents")})));
  return m;
}

TEST(BranchViewTest, TheBranchSeesTheOpeningItsPromptAndItsOwnWorkOnly) {
  Fixture f;
  json m = ParentThenBranch();
  f.Open(kOuter);
  AppliedRequest first = f.Apply(m);
  EXPECT_EQ(first.view, "isolated");
  EXPECT_GT(first.view_tokens_spared, 0);
  json sent = json::parse(first.body);
  ASSERT_EQ(sent["messages"].size(), 2u);
  EXPECT_EQ(sent["messages"][0], m[0]);
  const std::string opening = sent["messages"][1]["content"][0]["text"];
  EXPECT_THAT(opening, HasSubstr("[contextd] Branch " + kOuter));
  EXPECT_THAT(opening, HasSubstr("find the bug in lexer.cc"));
  EXPECT_THAT(opening, HasSubstr("BRANCH_FILE [REDACTED] contents"));
  EXPECT_THAT(first.body, Not(HasSubstr("PARENT_FILE")));
  EXPECT_THAT(first.body, Not(HasSubstr("SECRET42")));
  // The client's breakpoint on the hidden tail moves to the opening turn.
  EXPECT_TRUE(sent["messages"][1]["content"][0].contains("cache_control"));

  // The branch's next turns follow the same view, byte for byte.
  m.push_back(Msg("assistant", json::array({Use("b1", "Bash")})));
  m.push_back(Msg("user", json::array({Result("b1", "ran the tests")})));
  AppliedRequest second = f.Apply(m);
  json next = json::parse(second.body);
  ASSERT_EQ(next["messages"].size(), 4u);
  EXPECT_EQ(next["messages"][1]["content"][0]["text"], opening);
  EXPECT_EQ(next["messages"][2], m[5]);
  EXPECT_THAT(second.body, Not(HasSubstr("PARENT_FILE")));

  // On the return, the parent's own transcript resumes with the branch folded.
  m.push_back(Msg("assistant", json::array({Use("ret", "mcp__contextd__branch_return")})));
  m.push_back(Msg("user", json::array({Result("ret", "{}")})));
  f.Return(kOuter, "lexer.cc drops the last token");
  AppliedRequest folded = f.Apply(m);
  EXPECT_EQ(folded.view, "");
  EXPECT_EQ(folded.folds_new, 1);
  EXPECT_THAT(folded.body, HasSubstr("PARENT_FILE"));
  EXPECT_THAT(folded.body, HasSubstr("lexer.cc drops the last token"));
  EXPECT_THAT(folded.body, Not(HasSubstr("BRANCH_FILE")));
  EXPECT_THAT(folded.body, Not(HasSubstr("[contextd] Branch")));
}

TEST(BranchViewTest, ARestartSendsTheSameViewBytes) {
  Fixture f;
  json m = ParentThenBranch();
  f.Open(kOuter);
  f.Apply(m);
  m.push_back(Msg("assistant", json::array({Use("b1", "Bash")})));
  m.push_back(Msg("user", json::array({Result("b1", "ran")})));
  AppliedRequest before = f.Apply(m);
  auto restarted = f.Make();
  AppliedRequest after = f.Apply(m, restarted.get());
  EXPECT_EQ(after.view, "isolated");
  EXPECT_EQ(after.body, before.body);
}

TEST(BranchViewTest, AnOpeningHoldingPrivateTextIsNotStoredAndIsSentTheSame) {
  Fixture f;
  json m = ParentThenBranch();
  m[4]["content"][1] = Result("r1", "read <private>PRIV_NOTE</private> and SECRET42");
  f.Open(kOuter);
  AppliedRequest first = f.Apply(m);
  EXPECT_EQ(first.view, "isolated");
  EXPECT_THAT(first.body, HasSubstr("<private>PRIV_NOTE</private> and [REDACTED]"));
  auto stored = f.store.Load(first.key);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  bool view_stored = false;
  for (const Rewrite& rewrite : (*stored)->rewrites) {
    EXPECT_THAT(rewrite.value, Not(HasSubstr("PRIV_NOTE")));
    view_stored |= rewrite.kind == RewriteKind::kView;
  }
  EXPECT_TRUE(view_stored);
  const std::string opening = json::parse(first.body)["messages"][1]["content"][0]["text"];
  m.push_back(Msg("assistant", json::array({Use("b1", "Bash")})));
  m.push_back(Msg("user", json::array({Result("b1", "ran")})));
  auto restarted = f.Make();
  for (ContextManager* manager : {f.manager.get(), restarted.get()}) {
    AppliedRequest next = f.Apply(m, manager);
    EXPECT_EQ(json::parse(next.body)["messages"][1]["content"][0]["text"], opening);
  }
}

TEST(BranchViewTest, InheritedKeepsTheParentsHistory) {
  Fixture f;
  f.options.branch_view.view = BranchView::kInherited;
  f.manager = f.Make();
  f.Open(kOuter);
  AppliedRequest applied = f.Apply(ParentThenBranch());
  EXPECT_EQ(applied.view, "inherited");
  EXPECT_EQ(applied.view_tokens_spared, 0);
  EXPECT_THAT(applied.body, HasSubstr("PARENT_FILE"));
  EXPECT_THAT(applied.body, Not(HasSubstr("[contextd] Branch")));
}

TEST(BranchViewTest, ABranchTheModelAnsweredInBeforeKeepsTheInheritedView) {
  Fixture f;
  json m = ParentThenBranch();
  m.push_back(Msg("assistant", json::array({Use("b1", "Bash")})));
  m.push_back(Msg("user", json::array({Result("b1", "ran")})));
  f.Open(kOuter);
  AppliedRequest applied = f.Apply(m);  // first seen after the model's first turn inside it
  EXPECT_EQ(applied.view, "inherited");
  EXPECT_THAT(applied.body, HasSubstr("PARENT_FILE"));
}

TEST(BranchViewTest, WithoutTheOpeningTheBranchTurnComesFirst) {
  Fixture f;
  f.options.branch_view.keep_opening = false;
  f.manager = f.Make();
  f.Open(kOuter);
  AppliedRequest applied = f.Apply(ParentThenBranch());
  json sent = json::parse(applied.body);
  ASSERT_EQ(sent["messages"].size(), 1u);
  EXPECT_EQ(sent["messages"][0]["role"], "user");
  EXPECT_THAT(applied.body, Not(HasSubstr("the task: fix the parser")));
}

TEST(BranchViewTest, ANestedBranchGetsItsOwnViewAndTheOuterResumesAfterIt) {
  Fixture f;
  json m = ParentThenBranch();
  f.Open(kOuter);
  AppliedRequest outer = f.Apply(m);
  const std::string outer_opening = json::parse(outer.body)["messages"][1]["content"][0]["text"];
  m.push_back(Msg("assistant", json::array({Use("o1", "Grep")})));
  m.push_back(Msg("user", json::array({Result("o1", "OUTER_WORK hits")})));
  m.push_back(Msg("assistant", json::array({Create("c2", "check the tokenizer table")})));
  m.push_back(Msg("user", json::array({Result("c2", Created(kInner))})));
  f.Open(kInner);
  AppliedRequest inner = f.Apply(m);
  EXPECT_EQ(inner.open_branch_id, kInner);
  EXPECT_THAT(inner.body, HasSubstr("[contextd] Branch " + kInner));
  EXPECT_THAT(inner.body, HasSubstr("check the tokenizer table"));
  EXPECT_THAT(inner.body, Not(HasSubstr("OUTER_WORK")));
  EXPECT_THAT(inner.body, Not(HasSubstr("BRANCH_FILE")));
  EXPECT_THAT(inner.body, Not(HasSubstr("PARENT_FILE")));

  m.push_back(Msg("assistant", json::array({Use("ret2", "mcp__contextd__branch_return")})));
  m.push_back(Msg("user", json::array({Result("ret2", "{}")})));
  f.Return(kInner, "the table is fine");
  AppliedRequest back = f.Apply(m);
  EXPECT_EQ(back.open_branch_id, kOuter);
  json sent = json::parse(back.body);
  EXPECT_EQ(sent["messages"][1]["content"][0]["text"], outer_opening);
  EXPECT_THAT(back.body, HasSubstr("OUTER_WORK"));
  EXPECT_THAT(back.body, HasSubstr("the table is fine"));
  EXPECT_THAT(back.body, Not(HasSubstr("PARENT_FILE")));
}

TEST(BranchViewTest, ABranchThatInheritsInsideAnIsolatedOneGetsThatOnesView) {
  Fixture f;
  json m = ParentThenBranch();
  f.Open(kOuter);
  f.Apply(m);
  // The operator switches to inherited: branches opened from now on inherit what their parent
  // is sent, which inside the outer branch is its view.
  f.options.branch_view.view = BranchView::kInherited;
  f.manager = f.Make();
  m.push_back(Msg("assistant", json::array({Create("c2", "check the table")})));
  m.push_back(Msg("user", json::array({Result("c2", Created(kInner))})));
  f.Open(kInner);
  AppliedRequest inner = f.Apply(m);
  EXPECT_EQ(inner.open_branch_id, kInner);
  EXPECT_EQ(inner.view, "isolated");
  EXPECT_THAT(inner.body, HasSubstr("[contextd] Branch " + kOuter));
  EXPECT_THAT(inner.body, HasSubstr("c2"));
  EXPECT_THAT(inner.body, Not(HasSubstr("PARENT_FILE")));
}

TEST(BranchViewTest, AForceReturnEndsTheViewWhereItWasDecided) {
  Fixture f;
  f.budget = 200;
  json m = ParentThenBranch();
  f.Open(kOuter);
  EXPECT_EQ(f.Apply(m).view, "isolated");
  m.push_back(Msg("assistant", json::array({Use("b1", "Read")})));
  m.push_back(Msg("user", json::array({Result("b1", std::string(2000, 'z'))})));
  AppliedRequest exhausted = f.Apply(m);
  EXPECT_TRUE(exhausted.exhausted);
  EXPECT_EQ(exhausted.view, "");
  EXPECT_EQ(exhausted.folds_applied, 1);
  EXPECT_THAT(exhausted.body, HasSubstr("PARENT_FILE"));
  EXPECT_THAT(exhausted.body, Not(HasSubstr("zzzz")));
}

TEST(BranchViewTest, ASummaryRequestGetsTheParentsViewWithTheOpenBranchesFolded) {
  Fixture f;
  json m = ParentThenBranch();
  f.Open(kOuter);
  AppliedRequest view = f.Apply(m);
  m.push_back(Msg("assistant", json::array({Use("b1", "Bash")})));
  m.push_back(Msg("user", json::array({Result("b1", "BRANCH_WORK output")})));
  json compact = m;
  compact.push_back(
      Msg("user", json::array({Text("CRITICAL: Respond with TEXT ONLY. Summarise.")})));
  for (bool tools : {true, false}) {
    AppliedRequest summary = f.Apply(compact, nullptr, tools);
    EXPECT_EQ(summary.view, "summary");
    EXPECT_THAT(summary.body, HasSubstr("PARENT_FILE"));
    EXPECT_THAT(summary.body, HasSubstr(OpenBranchText(kOuter)));
    EXPECT_THAT(summary.body, HasSubstr("CRITICAL: Respond with TEXT ONLY"));
    EXPECT_THAT(summary.body, Not(HasSubstr("BRANCH_WORK")));
    EXPECT_THAT(summary.body, Not(HasSubstr("[contextd] Branch")));
    EXPECT_EQ(summary.folds_new, 0);
  }
  // The branch goes on in its view.
  AppliedRequest next = f.Apply(m);
  EXPECT_EQ(next.view, "isolated");
  EXPECT_EQ(json::parse(next.body)["messages"][1]["content"][0]["text"],
            json::parse(view.body)["messages"][1]["content"][0]["text"]);
}

TEST(BranchViewTest, ChatCompletionsGetsTheViewAsAUserMessage) {
  Fixture f;
  f.Open(kOuter);
  json messages = json::array();
  messages.push_back({{"role", "system"}, {"content", "be brief"}});
  messages.push_back({{"role", "user"}, {"content", "the task"}});
  auto call = [](const std::string& id, const std::string& name, const std::string& args) {
    return json{
        {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
  };
  messages.push_back({{"role", "assistant"},
                      {"content", nullptr},
                      {"tool_calls", json::array({call("p1", "read", "{}")})}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", "p1"}, {"content", "PARENT_FILE"}});
  messages.push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        json::array({call("c1", "contextd__branch_create",
                          "{\"description\":\"d\",\"prompt\":\"look at lexer.cc\"}")})}});
  messages.push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", Created(kOuter)}});
  json body = {{"model", "m"},
               {"messages", messages},
               {"tools", json::array({{{"type", "function"}, {"function", {{"name", "read"}}}}})}};
  auto parsed = OpenAIChatRequest::Parse(body.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto applied =
      f.manager->Apply("local", "", std::shared_ptr<ModelRequest>(*std::move(parsed)), 1);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->view, "isolated");
  json sent = json::parse(applied->body);
  ASSERT_EQ(sent["messages"].size(), 3u);
  EXPECT_EQ(sent["messages"][0], messages[0]);
  EXPECT_EQ(sent["messages"][1], messages[1]);
  EXPECT_EQ(sent["messages"][2]["role"], "user");
  EXPECT_THAT(sent["messages"][2]["content"].get<std::string>(), HasSubstr("look at lexer.cc"));
  EXPECT_THAT(applied->body, Not(HasSubstr("PARENT_FILE")));
}

}  // namespace
}  // namespace contextd::model
