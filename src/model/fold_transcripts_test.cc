// The fold rule on what real clients send around a branch: mid-conversation system messages,
// <system-reminder> blocks, content after the return's result, a person's message inside the
// span, nested and sibling branches, and every way a client names contextd's tools (Claude Code,
// Codex, OpenCode, a server the user named otherwise, another server's branch_create).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/anthropic_request.h"
#include "model/fold.h"
#include "model/openai_chat_request.h"
#include "model/openai_responses_request.h"
#include "model/tool_names.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;

std::string BranchId(int n) {
  std::string hex = "0123456789abcdef0123456789abcde";
  return "br_" + hex + std::string(1, "0123456789abcdef"[n % 16]);
}

json Use(const std::string& id, const std::string& name, json input = json::object()) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}};
}
json Result(const std::string& id, const std::string& text) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}};
}
json Text(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
json Thinking(const std::string& text) {
  return {{"type", "thinking"}, {"thinking", text}, {"signature", "sig-" + text}};
}
json Msg(const std::string& role, json content) {
  return {{"role", role}, {"content", std::move(content)}};
}

// Builds a Messages conversation turn by turn.
class Conversation {
 public:
  explicit Conversation(std::string prefix = "mcp__contextd__") : prefix_(std::move(prefix)) {
    messages_.push_back(Msg("user", json::array({Text("fix the bug")})));
  }
  Conversation& Assistant(json blocks) {
    json content = json::array({Thinking("t" + std::to_string(messages_.size()))});
    for (json& b : blocks) content.push_back(std::move(b));
    messages_.push_back(Msg("assistant", std::move(content)));
    return *this;
  }
  Conversation& User(json blocks) {
    messages_.push_back(Msg("user", std::move(blocks)));
    return *this;
  }
  Conversation& System(const std::string& text) {
    messages_.push_back(Msg("system", text));
    return *this;
  }
  // A branch_create turn (with `also` in parallel) and its results.
  Conversation& Create(const std::string& id, int branch, json also = json::array()) {
    json calls = json::array({Use(id, prefix_ + "branch_create", {{"description", "d"}})});
    for (json& b : also) calls.push_back(std::move(b));
    Assistant(calls);
    json results = json::array({Result(id, "{\"branch_id\":\"" + BranchId(branch) + "\"}")});
    for (size_t i = 1; i < calls.size(); ++i) {
      results.push_back(Result(calls[i]["id"], "ok " + std::to_string(i)));
    }
    return User(results);
  }
  Conversation& Work(const std::string& id, const std::string& tool, size_t size = 800) {
    Assistant(json::array({Use(id, tool)}));
    return User(json::array({Result(id, std::string(size, 'w'))}));
  }
  // A branch_return turn; `after`: blocks after its result in the same user message.
  Conversation& Return(const std::string& id, int branch, json after = json::array()) {
    Assistant(json::array({Use(id, prefix_ + "branch_return",
                               {{"branch_id", BranchId(branch)}, {"message", "done"}})}));
    json results = json::array({Result(id, "{\"branch_id\":\"" + BranchId(branch) + "\"}")});
    for (json& b : after) results.push_back(std::move(b));
    return User(results);
  }
  json Body(json tools = json::array()) const {
    json body = {{"model", "claude-x"}, {"max_tokens", 100}, {"messages", messages_}};
    if (!tools.empty()) body["tools"] = std::move(tools);
    return body;
  }
  size_t size() const { return messages_.size(); }

 private:
  std::string prefix_;
  json messages_ = json::array();
};

BranchFacts Ended(const std::string& id, const std::string& status = "completed") {
  BranchFacts facts;
  facts.branch_id = id;
  facts.ended = true;
  facts.status = status;
  facts.summary = "summary of " + id;
  facts.tokens_used = 500;
  facts.tokens_folded = 490;
  return facts;
}

std::unique_ptr<AnthropicRequest> Parse(const json& body) {
  auto request = AnthropicRequest::Parse(body.dump());
  EXPECT_TRUE(request.ok()) << request.status();
  (*request)->ComputeKeys();
  return *std::move(request);
}

// Plans with every branch ended (or those in `open` live), renders, and checks the result.
struct Folded {
  FoldPlan plan;
  json sent;
  std::string body;
};
Folded FoldAll(const ModelRequest& request, const std::set<std::string>& open = {},
               const std::map<std::string, FoldRecord>& records = {}) {
  Folded out;
  out.plan = PlanFolds(request.transcript(), records, [&](const std::string& id) {
    BranchFacts facts = Ended(id);
    facts.ended = !open.count(id);
    return std::optional<BranchFacts>(facts);
  });
  RenderPlan render;
  render.folds = out.plan.edits;
  out.body = request.Render(render);
  out.sent = json::parse(out.body);
  EXPECT_TRUE(ValidateTranscript(request.RenderedTranscript(render)).ok());
  return out;
}

TEST(FoldTranscriptsTest, SystemMessagesAndRemindersInsideTheSpanFold) {
  Conversation c;
  c.Create("c1", 1).System("The user hasn't heard from you in a while.");
  c.User(json::array({Text("<system-reminder>todo list is empty</system-reminder>")}));
  c.Work("r1", "Read").Work("g1", "Grep");
  c.System("Status check");
  c.Return("ret1", 1);
  auto request = Parse(c.Body());
  ASSERT_TRUE(ValidateTranscript(request->transcript()).ok());
  Folded f = FoldAll(*request);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  EXPECT_TRUE(f.plan.skipped.empty());
  EXPECT_EQ(f.sent["messages"].size(), 3u);
  EXPECT_EQ(f.body.find("hasn't heard"), std::string::npos);
  EXPECT_EQ(f.body.find("todo list is empty"), std::string::npos);
  EXPECT_EQ(f.body.find("wwww"), std::string::npos);
}

TEST(FoldTranscriptsTest, WhatFollowsTheReturnInItsRequestStays) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read");
  c.Return("ret1", 1, json::array({Text("<system-reminder>after</system-reminder>")}));
  c.System("The user hasn't heard from you in a while.");
  c.User(json::array({Text("and then fix it")}));
  auto request = Parse(c.Body());
  Folded f = FoldAll(*request);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  ASSERT_EQ(f.plan.new_records.size(), 1u);
  const json& messages = f.sent["messages"];
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_EQ(messages[2]["content"][0]["tool_use_id"], "c1");
  EXPECT_EQ(messages[2]["content"][1]["text"], "<system-reminder>after</system-reminder>");
  EXPECT_EQ(messages[3]["role"], "system");
  EXPECT_EQ(messages[4]["content"][0]["text"], "and then fix it");
}

TEST(FoldTranscriptsTest, APersonsMessageInsideTheSpanStaysInOrderAndTheSameOnEveryRequest) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read");
  c.User(json::array({Text("<system-reminder>queued</system-reminder>"),
                      Text("also look at b.py")}));  // after results: a queued message
  c.Assistant(json::array({Text("ok")}));
  c.User(json::array({Text("second thought")}));
  c.Work("r2", "Read").Return("ret1", 1);
  auto request = Parse(c.Body());
  Folded f = FoldAll(*request);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  json folded = f.sent["messages"][2]["content"];
  ASSERT_EQ(folded.size(), 3u);
  EXPECT_EQ(folded[1]["text"], "also look at b.py");
  EXPECT_EQ(folded[2]["text"], "second thought");
  // A later request applies the stored record and renders the same bytes.
  c.Assistant(json::array({Text("fixed")})).User(json::array({Text("thanks")}));
  auto next = Parse(c.Body());
  std::map<std::string, FoldRecord> records{{"c1", f.plan.new_records.at(0)}};
  Folded again = FoldAll(*next, {}, records);
  EXPECT_EQ(again.sent["messages"][2].dump(), f.sent["messages"][2].dump());
  EXPECT_TRUE(again.plan.new_records.empty());
}

TEST(FoldTranscriptsTest, NestedAndSiblingBranchesFoldOnceEach) {
  // Each fold is decided by the request that carries its return, as a client sends them.
  std::map<std::string, FoldRecord> records;
  auto request_now = [&](const Conversation& c, const std::set<std::string>& open = {}) {
    auto request = Parse(c.Body());
    Folded f = FoldAll(*request, open, records);
    for (const FoldRecord& r : f.plan.new_records) records.emplace(r.create_call_id, r);
    EXPECT_TRUE(f.plan.skipped.empty());
    return f;
  };
  Conversation c;
  c.Work("r0", "Read");
  c.Create("c1", 1, json::array({Use("b1", "Bash")})).Work("r1", "Read");
  c.Create("c2", 2).Work("g2", "Grep").Return("ret2", 2);
  EXPECT_EQ(request_now(c, {BranchId(1)}).plan.new_records.size(), 1u);  // the inner branch
  c.Work("r3", "Read").Return("ret1", 1);
  Folded outer = request_now(c);
  ASSERT_EQ(outer.plan.edits.size(), 1u);  // the inner fold is inside the outer one
  EXPECT_EQ(outer.plan.edits[0].create_call_id, "c1");
  EXPECT_THAT(outer.plan.edits[0].stub_call_ids, testing::ElementsAre("b1"));
  c.Create("c3", 3).Work("r4", "Read").Return("ret3", 3);
  Folded f = request_now(c);
  ASSERT_EQ(f.plan.edits.size(), 2u);
  EXPECT_EQ(f.plan.edits[1].create_call_id, "c3");
  EXPECT_EQ(f.sent["messages"].size(), 7u);  // task, r0 pair, c1 pair, c3 pair
  EXPECT_EQ(f.sent["messages"][4].dump(), outer.sent["messages"][4].dump());
}

TEST(FoldTranscriptsTest, ForceReturnedBranchFoldsAtTheAnswerToTheLastTurn) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read").Work("r2", "Read", 5000);
  c.System("The user hasn't heard from you in a while.");
  auto request = Parse(c.Body());
  Folded f = FoldAll(*request);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  ASSERT_EQ(f.plan.new_records.size(), 1u);
  EXPECT_TRUE(f.plan.new_records[0].forced);
  EXPECT_EQ(f.plan.edits[0].end_message, 6u);
  EXPECT_EQ(f.sent["messages"].size(), 4u);  // the system message after the fold stays
  EXPECT_EQ(f.sent["messages"][3]["role"], "system");
  // An open branch is not folded, and it is reported for charging.
  Folded live = FoldAll(*request, {BranchId(1)});
  EXPECT_TRUE(live.plan.edits.empty());
  EXPECT_EQ(live.plan.open_branch_id, BranchId(1));
}

TEST(FoldTranscriptsTest, ARefusedCreateCarryingAnotherBranchsNoticeIsNotThatBranch) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read").Return("ret1", 1);
  std::map<std::string, FoldRecord> records;
  for (const FoldRecord& r : FoldAll(*Parse(c.Body())).plan.new_records)
    records.emplace(r.create_call_id, r);
  // The next create is refused; its error carries a notice naming branch 1.
  c.Assistant(json::array({Use("c2", "mcp__contextd__branch_create")}));
  c.User(json::array({Result("c2",
                             "branch_creation_rate_limit (5/minute) reached; retry in 5 s\n"
                             "branch " +
                                 BranchId(1) + " returned: done")}));
  c.Work("r2", "Read");
  Folded f = FoldAll(*Parse(c.Body()), {}, records);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  EXPECT_EQ(f.plan.edits[0].create_call_id, "c1");
  EXPECT_TRUE(f.plan.new_records.empty());
  EXPECT_NE(f.body.find("wwww"), std::string::npos) << "the work after the refused create stays";
}

TEST(FoldTranscriptsTest, AReturnWhoseCreateWasCompactedAwayIsReported) {
  // The client compacted while branch 1 was open: its create turn is gone, its return is not.
  Conversation c;
  c.User(json::array({Text("summary of the conversation so far")}));
  c.Work("r1", "Read").Return("ret1", 1);
  Folded f = FoldAll(*Parse(c.Body()));
  EXPECT_TRUE(f.plan.edits.empty());
  ASSERT_EQ(f.plan.skipped.size(), 1u);
  EXPECT_EQ(f.plan.skipped[0].reason, SkipReason::kNoCreate);
  EXPECT_EQ(f.plan.skipped[0].branch_id, BranchId(1));
}

TEST(FoldTranscriptsTest, AStoredFoldWhoseEndTheClientNoLongerSendsIsReported) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read");
  Conversation edited = c;  // the client rewinds to before the return and goes another way
  c.Return("ret1", 1);
  std::map<std::string, FoldRecord> records;
  for (const FoldRecord& r : FoldAll(*Parse(c.Body())).plan.new_records)
    records.emplace(r.create_call_id, r);
  ASSERT_EQ(records.size(), 1u);
  edited.Work("r2", "Grep");
  Folded f = FoldAll(*Parse(edited.Body()), {}, records);
  EXPECT_TRUE(f.plan.edits.empty());
  ASSERT_EQ(f.plan.skipped.size(), 1u);
  EXPECT_EQ(f.plan.skipped[0].reason, SkipReason::kMissingEnd);
}

TEST(FoldTranscriptsTest, ABranchStraddlingAForcedFoldsEdgeIsReported) {
  // Branch 1 is force-returned while branch 2, nested in it, runs on; branch 2 returns later.
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read").Create("c2", 2).Work("r2", "Read");
  std::map<std::string, FoldRecord> records;
  for (const FoldRecord& r : FoldAll(*Parse(c.Body()), {BranchId(2)}).plan.new_records) {
    records.emplace(r.create_call_id, r);
  }
  ASSERT_EQ(records.count("c1"), 1u);
  c.Work("r3", "Read").Return("ret2", 2);
  Folded f = FoldAll(*Parse(c.Body()), {}, records);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  EXPECT_EQ(f.plan.edits[0].create_call_id, "c1");
  ASSERT_EQ(f.plan.skipped.size(), 1u);
  EXPECT_EQ(f.plan.skipped[0].reason, SkipReason::kOverlap);
  EXPECT_EQ(f.plan.skipped[0].branch_id, BranchId(2));
}

TEST(FoldTranscriptsTest, WhatTheClientAttachesToTheCreatesAnswerStaysUnderTheCurrentRule) {
  // After a compaction Claude Code keeps the create turn and attaches its context (environment,
  // the servers' instructions) to that turn's answer.
  Conversation c;
  c.Assistant(json::array({Use("c1", "mcp__contextd__branch_create")}));
  c.User(json::array({Result("c1", "{\"branch_id\":\"" + BranchId(1) + "\"}"),
                      Text("<system-reminder># Environment ...</system-reminder>")}));
  c.Work("r1", "Read").Return("ret1", 1);
  auto request = Parse(c.Body());
  Folded f = FoldAll(*request);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  EXPECT_EQ(f.plan.new_records.at(0).keep_rule, FoldRecord::kCurrentKeepRule);
  EXPECT_NE(f.body.find("# Environment"), std::string::npos);
  // A fold stored before the rule (no keep_rule) renders as it did then: byte for byte.
  json old = json::parse(f.plan.new_records[0].Serialize());
  old.erase("keep_rule");
  auto parsed = FoldRecord::Parse(old.dump());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->keep_rule, 1);
  Folded before = FoldAll(*request, {}, {{"c1", *parsed}});
  EXPECT_EQ(before.body.find("# Environment"), std::string::npos);
  EXPECT_FALSE(FoldRecord::Parse(R"({"create_call_id":"c","branch_id":"b","forced":false,)"
                                 R"("end_call_id":"e","end_message_key":"","result_text":"",)"
                                 R"("keep_rule":9})")
                   .ok());
}

TEST(FoldTranscriptsTest, ATurnPrefilledAtTheTailWaits) {
  Conversation c;
  c.Create("c1", 1).Work("r1", "Read").Assistant(json::array({Text("I will")}));
  auto request = Parse(c.Body());
  Folded f = FoldAll(*request);
  EXPECT_TRUE(f.plan.edits.empty());
  EXPECT_TRUE(f.plan.skipped.empty());
}

TEST(FoldTranscriptsTest, EveryWayAClientNamesContextdsTools) {
  for (std::string prefix : {"mcp__contextd__", "contextd__", "contextd_", ""}) {
    Conversation c(prefix);
    c.Create("c1", 1).Work("r1", "Read").Return("ret1", 1);
    Folded f = FoldAll(*Parse(c.Body()));
    EXPECT_EQ(f.plan.edits.size(), 1u) << prefix;
  }
  // A server the user named "ctx": its tool definitions say it is contextd.
  json tools = json::array(
      {{{"name", "mcp__ctx__branch_create"},
        {"description", "Open a branch: an isolated sub-context for a subtask (exploring)"},
        {"input_schema", {{"type", "object"}}}}});
  Conversation ctx("mcp__ctx__");
  ctx.Create("c1", 1).Work("r1", "Read").Return("ret1", 1);
  EXPECT_EQ(FoldAll(*Parse(ctx.Body(tools))).plan.edits.size(), 1u);
  EXPECT_TRUE(FoldAll(*Parse(ctx.Body())).plan.edits.empty()) << "undeclared: not contextd's";
  // Another server's branch_create is not contextd's, even with a branch id in its result.
  Conversation other("mcp__github__");
  other.Create("c1", 1).Work("r1", "Read").Return("ret1", 1);
  EXPECT_TRUE(FoldAll(*Parse(other.Body(tools))).plan.edits.empty());
}

TEST(FoldTranscriptsTest, ToolNamesResolve) {
  ContextdToolNames names;
  EXPECT_EQ(names.Resolve("mcp__contextd__branch_create"), "branch_create");
  EXPECT_EQ(names.Resolve("contextd_branch_return"), "branch_return");
  EXPECT_EQ(names.Resolve("contextd__fs__read_file"), "fs__read_file");
  EXPECT_EQ(names.Resolve("trail_unfold"), "trail_unfold");
  EXPECT_EQ(names.Resolve("mcp__github__branch_create"), "");
  EXPECT_EQ(names.Resolve("Read"), "");
  EXPECT_EQ(names.Resolve("contextd_"), "");
  EXPECT_FALSE(names.Declare("mcp__x__branch_create", "Creates a git branch"));
  EXPECT_TRUE(names.Declare("x.branch_create",
                            "Open a branch: an isolated sub-context for a subtask, more"));
  EXPECT_EQ(names.Resolve("x.memory_search"), "memory_search");
  EXPECT_EQ(NamespacedToolName("mcp__contextd", "branch_create"), "mcp__contextd__branch_create");
  EXPECT_EQ(NamespacedToolName("mcp__contextd__", "x"), "mcp__contextd__x");
}

TEST(FoldTranscriptsTest, ChatCompletionsMidConversationSystemAndUserMessagesInTheSpan) {
  auto call = [](const std::string& id, const std::string& name) {
    return json{
        {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", "{}"}}}};
  };
  json messages = json::array({
      {{"role", "system"}, {"content", "be brief"}},
      {{"role", "user"}, {"content", "fix the bug"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({call("c1", "contextd_branch_create")})}},
      {{"role", "tool"},
       {"tool_call_id", "c1"},
       {"content", "{\"branch_id\":\"" + BranchId(1) + "\"}"}},
      {{"role", "developer"}, {"content", "keep going"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({call("r1", "read")})}},
      {{"role", "tool"}, {"tool_call_id", "r1"}, {"content", std::string(900, 'w')}},
      {{"role", "user"}, {"content", "also b.py"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", json::array({call("ret1", "contextd_branch_return")})}},
      {{"role", "tool"}, {"tool_call_id", "ret1"}, {"content", "ok"}},
  });
  auto parsed = OpenAIChatRequest::Parse(json{{"model", "m"}, {"messages", messages}}.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  (*parsed)->ComputeKeys();
  Folded f = FoldAll(**parsed);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  const json& sent = f.sent["messages"];
  ASSERT_EQ(sent.size(), 5u);
  EXPECT_EQ(sent[3]["role"], "tool");
  EXPECT_EQ(sent[4]["content"], "also b.py");
  EXPECT_EQ(f.body.find("keep going"), std::string::npos);
}

TEST(FoldTranscriptsTest, ResponsesDeveloperUpdateInTheSpanAndANamespacedServer) {
  auto call = [](const std::string& id, const std::string& space, const std::string& name) {
    return json{{"type", "function_call"},
                {"call_id", id},
                {"namespace", space},
                {"name", name},
                {"arguments", "{}"}};
  };
  auto output = [](const std::string& id, const std::string& text) {
    return json{{"type", "function_call_output"}, {"call_id", id}, {"output", text}};
  };
  json input = json::array({
      {{"type", "message"}, {"role", "developer"}, {"content", "rules"}},
      {{"type", "message"}, {"role", "user"}, {"content", "fix the bug"}},
      call("c1", "mcp__ctx", "branch_create"),
      output("c1", "{\"branch_id\":\"" + BranchId(1) + "\"}"),
      {{"type", "message"}, {"role", "developer"}, {"content", "<environment_context>x"}},
      call("r1", "", "shell"),
      output("r1", std::string(900, 'w')),
      call("ret1", "mcp__ctx", "branch_return"),
      output("ret1", "ok"),
  });
  json tools = json::array(
      {{{"type", "namespace"},
        {"name", "mcp__ctx"},
        {"tools",
         json::array(
             {{{"type", "function"},
               {"name", "branch_create"},
               {"description", "Open a branch: an isolated sub-context for a subtask (...)"}}})}}});
  auto parsed = OpenAIResponsesRequest::Parse(
      json{{"model", "m"}, {"input", input}, {"tools", tools}}.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  (*parsed)->ComputeKeys();
  Folded f = FoldAll(**parsed);
  ASSERT_EQ(f.plan.edits.size(), 1u);
  EXPECT_EQ(f.body.find("environment_context"), std::string::npos);
  EXPECT_EQ(f.body.find("wwww"), std::string::npos);
}

TEST(FoldTranscriptsTest, ASystemMessageSentAsABlockThenAsAStringKeepsItsKey) {
  // Claude Code: the newest system message as a text block with the breakpoint, later a string.
  json block = {{"role", "system"},
                {"content", json::array({{{"type", "text"},
                                          {"text", "12 tokens left"},
                                          {"cache_control", {{"type", "ephemeral"}}}}})}};
  json string = {{"role", "system"}, {"content", "12 tokens left"}};
  json other = {{"role", "system"}, {"content", "13 tokens left"}};
  auto key = [](const json& system) {
    json body = {{"model", "m"},
                 {"messages", json::array({Msg("user", json::array({Text("task")})), system})}};
    return Parse(body)->transcript().messages[1].key;
  };
  EXPECT_EQ(key(block), key(string));
  EXPECT_NE(key(string), key(other));
}

TEST(FoldTranscriptsTest, ValidatorAcceptsSystemMessagesAndCatchesBrokenPairs) {
  Conversation c;
  c.Create("c1", 1).System("nudge").Work("r1", "Read");
  EXPECT_TRUE(ValidateTranscript(Parse(c.Body())->transcript()).ok());
  c.Assistant(json::array({Use("x1", "Read")})).System("nudge");
  EXPECT_TRUE(ValidateTranscript(Parse(c.Body())->transcript()).ok()) << "calls at the tail";
  c.Assistant(json::array({Text("again")}));
  EXPECT_FALSE(ValidateTranscript(Parse(c.Body())->transcript()).ok());
}

}  // namespace
}  // namespace contextd::model
