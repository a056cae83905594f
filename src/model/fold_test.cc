#include "model/fold.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/anthropic_request.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;

const std::string kBranch = "br_0123456789abcdef0123456789abcdef";

json ToolUse(const std::string& id, const std::string& name, json input) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}};
}
json Result(const std::string& id, const std::string& text) {
  return {{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}};
}
json Text(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
json Msg(const std::string& role, json content) {
  return {{"role", role}, {"content", std::move(content)}};
}

// A conversation: the task, a branch opened in the same turn as a bash call, a Read inside it,
// the return as a turn of its own, and what follows.
json Conversation(bool returned, bool after) {
  json messages = json::array();
  messages.push_back(Msg("user", json::array({Text("fix the bug")})));
  messages.push_back(
      Msg("assistant",
          json::array({{{"type", "thinking"}, {"thinking", "let me branch"}, {"signature", "sig1"}},
                       ToolUse("c1", "mcp__contextd__branch_create",
                               {{"description", "find"}, {"prompt", "p"}}),
                       ToolUse("b1", "Bash", {{"command", "ls"}})})));
  messages.push_back(
      Msg("user", json::array({Result("c1", "{\"branch_id\":\"" + kBranch + "\",\"depth\":0}"),
                               Result("b1", "a.py b.py")})));
  messages.push_back(Msg("assistant", json::array({ToolUse("r1", "Read", {{"file", "a.py"}})})));
  messages.push_back(Msg("user", json::array({Result("r1", std::string(2000, 'x'))})));
  if (returned) {
    messages.push_back(Msg("assistant", json::array({ToolUse("ret1", "mcp__contextd__branch_return",
                                                             {{"message", "bug in a.py:3"}})})));
    json tail = json::array({Result("ret1", "{\"branch_id\":\"" + kBranch + "\"}"),
                             Text("<system-reminder>todo</system-reminder>")});
    tail[1]["cache_control"] = {{"type", "ephemeral"}};
    messages.push_back(Msg("user", tail));
  }
  if (after) {
    messages.back()["content"].back().erase("cache_control");
    messages.push_back(Msg("assistant", json::array({Text("fixing a.py")})));
    messages.push_back(Msg("user", json::array({Text("go on")})));
  }
  return {{"model", "claude-x"},
          {"max_tokens", 100},
          {"messages", messages},
          {"unknown_field", {{"kept", true}}}};
}

BranchFacts Returned() {
  BranchFacts facts;
  facts.branch_id = kBranch;
  facts.ended = true;
  facts.status = "completed";
  facts.summary = "bug in a.py:3";
  facts.tokens_used = 700;
  facts.tokens_folded = 690;
  return facts;
}

std::unique_ptr<AnthropicRequest> Parse(const json& body) {
  auto request = AnthropicRequest::Parse(body.dump());
  EXPECT_TRUE(request.ok()) << request.status();
  (*request)->ComputeKeys();
  return *std::move(request);
}

TEST(FoldTest, ReturnedBranchAtTheTailFoldsToOneResult) {
  auto request = Parse(Conversation(true, false));
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string& id) {
    EXPECT_EQ(id, kBranch);
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  ASSERT_EQ(plan.new_records.size(), 1u);
  EXPECT_FALSE(plan.new_records[0].forced);
  EXPECT_EQ(plan.new_records[0].end_call_id, "ret1");
  EXPECT_EQ(plan.edits[0].create_message, 1u);
  EXPECT_EQ(plan.edits[0].end_message, 6u);
  EXPECT_THAT(plan.edits[0].stub_call_ids, testing::ElementsAre("b1"));
  EXPECT_EQ(plan.open_branch_id, "");

  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  json sent = json::parse(out);
  ASSERT_EQ(sent["messages"].size(), 3u);
  // The assistant turn that opened the branch is byte-identical.
  json original = Conversation(true, false);
  EXPECT_NE(out.find(original["messages"][1].dump()), std::string::npos);
  json folded = sent["messages"][2];
  EXPECT_EQ(folded["role"], "user");
  ASSERT_EQ(folded["content"].size(), 3u);
  EXPECT_EQ(folded["content"][0]["tool_use_id"], "c1");
  EXPECT_THAT(folded["content"][0]["content"].get<std::string>(),
              testing::HasSubstr("bug in a.py:3"));
  EXPECT_EQ(folded["content"][1]["tool_use_id"], "b1");
  EXPECT_EQ(folded["content"][2]["text"], "<system-reminder>todo</system-reminder>");
  EXPECT_EQ(folded["content"][2]["cache_control"]["type"], "ephemeral");
  EXPECT_EQ(sent["unknown_field"]["kept"], true);
  EXPECT_EQ(out.find("xxxxxxxx"), std::string::npos);  // the Read result is gone
  EXPECT_TRUE(ValidateTranscript(request->RenderedTranscript(render)).ok());

  // The next request (grown, breakpoint moved) folds to the same bytes before its new tail.
  auto next = Parse(Conversation(true, true));
  std::map<std::string, FoldRecord> records{{"c1", plan.new_records[0]}};
  FoldPlan again = PlanFolds(next->transcript(), records, [](const std::string&) {
    ADD_FAILURE() << "a stored fold needs no lookup";
    return std::optional<BranchFacts>();
  });
  ASSERT_EQ(again.edits.size(), 1u);
  RenderPlan render2;
  render2.folds = again.edits;
  std::string out2 = next->Render(render2);
  // Everything up to the folded message's marker is the same.
  std::string common = out.substr(0, out.find(",\"cache_control\""));
  EXPECT_EQ(out2.substr(0, common.size()), common);
  EXPECT_TRUE(ValidateTranscript(next->RenderedTranscript(render2)).ok());
}

TEST(FoldTest, ABreakpointOnARemovedBlockMovesToTheBlockThatReplacesIt) {
  json body = Conversation(true, false);
  json& tail = body["messages"][6]["content"];
  tail.erase(1);  // the return's result alone, carrying the breakpoint
  tail[0]["content"] = json::array({Text("{\"branch_id\":\"" + kBranch + "\"}")});
  tail[0]["cache_control"] = {{"type", "ephemeral"}};
  body["system"] = json::array({Text("you are"), Text("instructions")});
  body["system"][1]["cache_control"] = {{"type", "ephemeral"}};
  auto request = Parse(body);
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  RenderPlan render;
  render.folds = plan.edits;
  json sent = json::parse(request->Render(render));
  json folded = sent["messages"][2]["content"];
  ASSERT_EQ(folded.size(), 2u);
  EXPECT_FALSE(folded[0].contains("cache_control"));
  EXPECT_EQ(folded[1]["cache_control"]["type"], "ephemeral");

  // Earlier folds (without breakpoints) do not use up the four: five of them before this one.
  json many = body;
  json& messages = many["messages"];
  json prefix = json::array({messages[0]});
  for (int k = 0; k < 5; ++k) {
    std::string id = std::to_string(k);
    std::string branch = "br_" + std::string(31, '0') + id;
    prefix.push_back(
        Msg("assistant", json::array({ToolUse("k" + id, "branch_create", json::object())})));
    prefix.push_back(
        Msg("user", json::array({Result("k" + id, "{\"branch_id\":\"" + branch + "\"}")})));
    prefix.push_back(
        Msg("assistant", json::array({ToolUse("kr" + id, "branch_return", json::object())})));
    prefix.push_back(Msg("user", json::array({Result("kr" + id, "ok")})));
    prefix.push_back(Msg("assistant", json::array({Text("next")})));
    prefix.push_back(Msg("user", json::array({Text("go")})));
  }
  prefix.push_back(Msg("assistant", json::array({Text("again")})));
  prefix.push_back(Msg("user", json::array({Text("the last task")})));
  for (size_t m = 1; m < messages.size(); ++m) prefix.push_back(messages[m]);
  many["messages"] = prefix;
  auto request2 = Parse(many);
  std::map<std::string, FoldRecord> records;
  for (int k = 0; k < 5; ++k) {
    FoldRecord r;
    r.create_call_id = "k" + std::to_string(k);
    r.branch_id = "br_" + std::string(31, '0') + std::to_string(k);
    r.end_call_id = "kr" + std::to_string(k);
    r.result_text = "folded";
    records[r.create_call_id] = r;
  }
  FoldPlan plan2 = PlanFolds(request2->transcript(), records, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan2.edits.size(), 6u);
  RenderPlan render2;
  render2.folds = plan2.edits;
  json sent2 = json::parse(request2->Render(render2));
  EXPECT_EQ(sent2["messages"].back()["content"].back()["cache_control"]["type"], "ephemeral");
  EXPECT_TRUE(ValidateTranscript(request2->RenderedTranscript(render2)).ok());
}

TEST(FoldTest, AReturnTheModelAnsweredWithoutARecordStaysWhole) {
  // The model answered after the return: its later turns were produced on the unfolded prefix.
  auto request = Parse(Conversation(true, true));
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  EXPECT_TRUE(plan.edits.empty());
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0].reason, SkipReason::kAnswered);
  EXPECT_EQ(plan.skipped[0].branch_id, kBranch);
  EXPECT_EQ(plan.skipped[0].create_call_id, "c1");
  // Once reported, it is left whole without a lookup and not reported again.
  std::set<std::string> settled{"c1"};
  FoldPlan again = PlanFolds(
      request->transcript(), {},
      [](const std::string&) {
        ADD_FAILURE() << "a settled skip needs no lookup";
        return std::optional<BranchFacts>();
      },
      &settled);
  EXPECT_TRUE(again.edits.empty());
  EXPECT_TRUE(again.skipped.empty());
}

TEST(FoldTest, ForceReturnedBranchFoldsAtTheTailWithItsNotice) {
  auto request = Parse(Conversation(false, false));
  BranchFacts facts = Returned();
  facts.status = "timeout";
  facts.finish_reason = "deadline passed";
  facts.summary = "partial: read a.py";
  FoldPlan plan = PlanFolds(request->transcript(), {},
                            [&](const std::string&) { return std::optional<BranchFacts>(facts); });
  ASSERT_EQ(plan.edits.size(), 1u);
  ASSERT_EQ(plan.new_records.size(), 1u);
  EXPECT_TRUE(plan.new_records[0].forced);
  EXPECT_THAT(plan.new_records[0].result_text, testing::HasSubstr("force-returned (timeout"));
  EXPECT_EQ(plan.edits[0].end_message, 4u);
  RenderPlan render;
  render.folds = plan.edits;
  EXPECT_TRUE(ValidateTranscript(request->RenderedTranscript(render)).ok());
  // Parse and serialize round trip of the record.
  auto parsed = FoldRecord::Parse(plan.new_records[0].Serialize());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->end_message_key, plan.new_records[0].end_message_key);
}

TEST(FoldTest, OpenBranchIsReportedForCharging) {
  auto request = Parse(Conversation(false, false));
  BranchFacts live = Returned();
  live.ended = false;
  FoldPlan plan = PlanFolds(request->transcript(), {},
                            [&](const std::string&) { return std::optional<BranchFacts>(live); });
  EXPECT_TRUE(plan.edits.empty());
  EXPECT_EQ(plan.open_branch_id, kBranch);
  EXPECT_EQ(plan.open_branch_create_message, 1u);
}

TEST(FoldTest, UserTextInsideTheBranchStaysAfterTheFoldedResult) {
  json body = Conversation(true, false);
  body["messages"][4]["content"].push_back(Text("actually, also check b.py"));
  auto request = Parse(body);
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_TRUE(plan.skipped.empty());
  // The typed text first (in order), then what the end holds besides results.
  EXPECT_THAT(plan.edits[0].kept_blocks,
              testing::ElementsAre(std::make_pair(size_t{4}, size_t{1}),
                                   std::make_pair(size_t{6}, size_t{1})));
  RenderPlan render;
  render.folds = plan.edits;
  json sent = json::parse(request->Render(render));
  json folded = sent["messages"][2]["content"];
  ASSERT_EQ(folded.size(), 4u);
  EXPECT_EQ(folded[2]["text"], "actually, also check b.py");
  EXPECT_EQ(folded[3]["text"], "<system-reminder>todo</system-reminder>");
  EXPECT_TRUE(ValidateTranscript(request->RenderedTranscript(render)).ok());
}

TEST(FoldTest, UnknownBlockInsideTheBranchFoldsWithIt) {
  json body = Conversation(true, false);
  body["messages"][3]["content"].push_back({{"type", "a_block_from_the_future"}, {"id", "s1"}});
  auto request = Parse(body);
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  EXPECT_EQ(plan.edits.size(), 1u);
  EXPECT_TRUE(plan.skipped.empty());
}

TEST(FoldTest, ProviderToolsInsideTheBranchFoldWithIt) {
  json body = Conversation(true, false);
  body["messages"][3]["content"].push_back({{"type", "server_tool_use"},
                                            {"id", "srvtoolu_1"},
                                            {"name", "web_search"},
                                            {"input", {{"query", "parser"}}}});
  body["messages"][3]["content"].push_back(
      {{"type", "web_search_tool_result"},
       {"tool_use_id", "srvtoolu_1"},
       {"content", json::array({{{"type", "web_search_result"}, {"url", "https://x"}}})}});
  auto request = Parse(body);
  EXPECT_FALSE(request->BlockText(3, 2).empty());  // counted from its JSON
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  EXPECT_EQ(plan.edits.size(), 1u);
  EXPECT_TRUE(plan.skipped.empty());
}

TEST(FoldTest, ValidatorCatchesOrphansAndMissingResults) {
  json body = Conversation(true, false);
  body["messages"][4]["content"][0]["tool_use_id"] = "nope";
  auto request = Parse(body);
  EXPECT_FALSE(ValidateTranscript(request->transcript()).ok());
  EXPECT_TRUE(ValidateTranscript(Parse(Conversation(true, true))->transcript()).ok());
}

TEST(AnthropicRequestTest, RejectsWhatIsNotAMessagesRequest) {
  EXPECT_FALSE(AnthropicRequest::Parse("{").ok());
  EXPECT_FALSE(AnthropicRequest::Parse("[]").ok());
  EXPECT_FALSE(AnthropicRequest::Parse("{\"messages\":{}}").ok());
  EXPECT_FALSE(AnthropicRequest::Parse("{\"messages\":[1]}").ok());
  EXPECT_TRUE(AnthropicRequest::Parse("{\"messages\":[]}").ok());
}

TEST(AnthropicRequestTest, KeysIgnoreCacheMarkers) {
  json a = Conversation(true, false);
  json b = a;
  b["messages"][6]["content"][1].erase("cache_control");
  b["messages"][2]["content"][1]["cache_control"] = {{"type", "ephemeral"}};
  auto ra = Parse(a);
  auto rb = Parse(b);
  for (size_t m = 0; m < ra->transcript().messages.size(); ++m) {
    EXPECT_EQ(ra->transcript().messages[m].key, rb->transcript().messages[m].key) << m;
  }
}

TEST(AnthropicRequestTest, AResentHistoryIsTakenOverAndReadsAsAFreshParse) {
  json first = Conversation(true, false);
  json second = Conversation(true, true);
  auto previous = AnthropicRequest::Parse(first.dump());
  ASSERT_TRUE(previous.ok());
  (*previous)->ComputeKeys();
  auto taken = AnthropicRequest::Parse(second.dump(), previous->get());
  ASSERT_TRUE(taken.ok());
  previous->reset();  // spent
  (*taken)->ComputeKeys();
  auto fresh = Parse(second);
  // Messages 0-5 are byte for byte those of the first request; 6 lost its marker.
  EXPECT_EQ((*taken)->reused_messages(), 6u);
  const Transcript& a = (*taken)->transcript();
  const Transcript& b = fresh->transcript();
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t m = 0; m < a.messages.size(); ++m) {
    EXPECT_EQ(a.messages[m].key, b.messages[m].key) << m;
    ASSERT_EQ(a.messages[m].blocks.size(), b.messages[m].blocks.size()) << m;
    for (size_t k = 0; k < a.messages[m].blocks.size(); ++k) {
      EXPECT_EQ(a.messages[m].blocks[k].key, b.messages[m].blocks[k].key);
      EXPECT_EQ(a.messages[m].blocks[k].text, b.messages[m].blocks[k].text);
      EXPECT_EQ(a.messages[m].blocks[k].call_id, b.messages[m].blocks[k].call_id);
      EXPECT_EQ((*taken)->BlockText(m, k), fresh->BlockText(m, k));
    }
  }
  FoldPlan plan =
      PlanFolds(a, {}, [](const std::string&) { return std::optional<BranchFacts>(Returned()); });
  RenderPlan render;
  render.folds = plan.edits;
  EXPECT_EQ((*taken)->Render(render), fresh->Render(render));
  // A body that differs early takes nothing over; an invalid tail is still refused.
  auto again = AnthropicRequest::Parse(second.dump(), fresh.get());
  ASSERT_TRUE(again.ok());
  std::string broken = second.dump();
  broken.insert(broken.size() - 30, "}");
  auto donor = Parse(second);
  EXPECT_FALSE(AnthropicRequest::Parse(broken, donor.get()).ok());
}

TEST(AnthropicRequestTest, RewriteKeepsOtherBytesAndPutsTheMarkerBack) {
  std::string body =
      R"({"messages":[{"role":"user","content":[{"type":"tool_result","cache_control":{"type":"ephemeral"},"tool_use_id":"t","content":"key=SECRET"}]}],"z":1})";
  auto request = AnthropicRequest::Parse(body);
  ASSERT_TRUE(request.ok());
  const auto& spans = (*request)->TextSpans(0, 0);
  ASSERT_EQ(spans.size(), 1u);
  std::string block = (*request)->RewriteBlock(0, 0, {{spans[0], "\"key=[REDACTED]\""}});
  EXPECT_EQ(block, R"({"type":"tool_result","tool_use_id":"t","content":"key=[REDACTED]"})");
  RenderPlan plan;
  plan.blocks[{0, 0}] = block;
  EXPECT_EQ(
      (*request)->Render(plan),
      R"({"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"key=[REDACTED]","cache_control":{"type":"ephemeral"}}]}],"z":1})");
}

}  // namespace
}  // namespace contextd::model
