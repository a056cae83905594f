#include "model/openai_responses_request.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/context_manager.h"
#include "model/fold.h"
#include "model/openai_chat_request.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/in_memory_conversation_store.h"
#include "model/testing/render_plans.h"
#include "model/testing/simple_parts.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBranch = "br_0123456789abcdef0123456789abcdef";

json Call(const std::string& id, const std::string& name, const json& arguments) {
  return {{"type", "function_call"},
          {"id", "fc_" + id},
          {"call_id", id},
          {"name", name},
          {"arguments", arguments.dump()}};
}
json Output(const std::string& id, json output) {
  return {{"type", "function_call_output"}, {"call_id", id}, {"output", std::move(output)}};
}
json Reasoning(const std::string& id) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", json::array({{{"type", "summary_text"}, {"text", "thinking " + id}}})},
          {"encrypted_content", "gAAAA" + id + "+/=="}};
}
json MessageItem(const std::string& role, json content) {
  return {{"type", "message"}, {"role", role}, {"content", std::move(content)}};
}
json UserText(const std::string& text) {
  return MessageItem("user", json::array({{{"type", "input_text"}, {"text", text}}}));
}

// A Responses conversation as Codex sends it: developer instructions, the task, a branch opened
// in the same turn as a bash call (each turn led by its reasoning item), a read inside it, the
// return, then (with `after`) what follows.
json Conversation(bool returned, bool after) {
  json input = json::array();
  input.push_back(
      MessageItem("developer", json::array({{{"type", "input_text"}, {"text", "rules"}}})));
  input.push_back(UserText("fix the bug"));
  input.push_back(Reasoning("rs_1"));
  input.push_back(
      Call("c1", "contextd__branch_create", {{"description", "find"}, {"prompt", "p"}}));
  input.push_back(Call("b1", "bash", {{"command", "ls"}}));
  input.push_back(Output("c1", "{\"branch_id\":\"" + kBranch + "\",\"depth\":0}"));
  input.push_back(Output("b1", "a.py b.py"));
  input.push_back(Reasoning("rs_2"));
  input.push_back(Call("r1", "read", {{"file", "a.py"}}));
  input.push_back(Output("r1", std::string(2000, 'x')));
  if (returned) {
    input.push_back(Reasoning("rs_3"));
    input.push_back(Call("ret1", "contextd__branch_return", {{"message", "bug in a.py:3"}}));
    input.push_back(Output("ret1", "{\"branch_id\":\"" + kBranch + "\"}"));
    input.push_back(UserText("<system-reminder>todo</system-reminder>"));
  }
  if (after) {
    input.push_back(MessageItem("assistant",
                                json::array({{{"type", "output_text"}, {"text", "fixing a.py"}}})));
    input.push_back(UserText("go on"));
  }
  return {{"model", "gpt-double"},
          {"instructions", "You are Codex."},
          {"input", input},
          {"tools", json::array()},
          {"store", false},
          {"stream", true},
          {"include", json::array({"reasoning.encrypted_content"})},
          {"prompt_cache_key", "conv-1"}};
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

std::unique_ptr<OpenAIResponsesRequest> Parse(const std::string& body) {
  auto request = OpenAIResponsesRequest::Parse(body);
  EXPECT_TRUE(request.ok()) << request.status();
  if (!request.ok()) return nullptr;
  (*request)->ComputeKeys();
  return *std::move(request);
}

// Fails unless every call item is answered by an output item before the next assistant-side
// run, and every output answers one.
void ExpectPaired(const json& input) {
  std::set<std::string> open;
  bool in_calls = false;
  for (const json& item : input) {
    const std::string type = item.value("type", "message");
    if (type == "function_call" || type == "custom_tool_call") {
      if (!in_calls) {
        EXPECT_TRUE(open.empty()) << "unanswered before " << item.dump();
      }
      in_calls = true;
      open.insert(item["call_id"].get<std::string>());
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      in_calls = false;
      EXPECT_EQ(open.erase(item["call_id"].get<std::string>()), 1u) << item.dump();
    } else if (type == "reasoning") {
      EXPECT_TRUE(open.empty()) << "unanswered before " << item.dump();
    }
  }
  EXPECT_TRUE(open.empty());
}

FoldPlan PlanReturned(const Transcript& t) {
  return PlanFolds(t, {}, [](const std::string& id) {
    EXPECT_EQ(id, kBranch);
    return std::optional<BranchFacts>(Returned());
  });
}

TEST(OpenAIResponsesRequestTest, ReadsTheNeutralView) {
  auto request = Parse(Conversation(true, false).dump());
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->api(), ModelApi::kOpenAIResponses);
  EXPECT_STREQ(ModelApiName(request->api()), "openai_responses");
  EXPECT_EQ(request->model(), "gpt-double");
  EXPECT_EQ(request->preamble(), 1u);
  EXPECT_EQ(request->unfoldable_reason(), "");
  const Transcript& t = request->transcript();
  ASSERT_EQ(t.messages.size(), 7u);
  EXPECT_EQ(t.messages[0].role, Role::kUser);
  EXPECT_EQ(t.messages[0].blocks[0].text, "fix the bug");
  // The reasoning item and both calls of the turn are one assistant message.
  const Message& create = t.messages[1];
  EXPECT_EQ(create.role, Role::kAssistant);
  ASSERT_EQ(create.blocks.size(), 3u);
  EXPECT_EQ(create.blocks[0].kind, BlockKind::kThinking);
  EXPECT_EQ(request->BlockText(1, 0), "thinking rs_1");
  EXPECT_EQ(create.blocks[1].kind, BlockKind::kToolCall);
  EXPECT_EQ(create.blocks[1].call_id, "c1");
  EXPECT_EQ(create.blocks[1].tool_name, "contextd__branch_create");
  EXPECT_EQ(create.blocks[1].text, R"({"description":"find","prompt":"p"})");
  EXPECT_EQ(create.blocks[2].text, "");  // only branch calls are read at parse time
  EXPECT_EQ(request->BlockText(1, 2), R"({"command":"ls"})");
  const Message& results = t.messages[2];
  EXPECT_EQ(results.role, Role::kUser);
  ASSERT_EQ(results.blocks.size(), 2u);
  EXPECT_EQ(results.blocks[0].kind, BlockKind::kToolResult);
  EXPECT_EQ(results.blocks[0].call_id, "c1");
  EXPECT_THAT(results.blocks[0].text, HasSubstr(kBranch));
  EXPECT_EQ(request->BlockText(2, 1), "a.py b.py");
  const Message& end = t.messages[6];
  ASSERT_EQ(end.blocks.size(), 2u);
  EXPECT_EQ(end.blocks[0].kind, BlockKind::kToolResult);
  EXPECT_EQ(end.blocks[1].kind, BlockKind::kText);
  EXPECT_TRUE(ValidateTranscript(t).ok());
  std::set<std::string> keys;
  for (const Message& m : t.messages) keys.insert(m.key);
  EXPECT_EQ(keys.size(), t.messages.size());
}

TEST(OpenAIResponsesRequestTest, ToolOutputsComeFirstAndNamespacesNameTheTool) {
  // Codex offers MCP tools in a namespace: the call names the namespace beside the tool.
  json create = Call("c1", "branch_create", {{"prompt", "p"}});
  create["namespace"] = "mcp__contextd";
  json body = {{"input", json::array({UserText("task"), create, UserText("a note first"),
                                      Output("c1", kBranch)})}};
  auto request = Parse(body.dump());
  const Transcript& t = request->transcript();
  ASSERT_EQ(t.messages.size(), 3u);
  EXPECT_EQ(t.messages[1].blocks[0].tool_name, "mcp__contextd__branch_create");
  EXPECT_EQ(t.messages[1].blocks[0].contextd_tool, "branch_create");
  ASSERT_EQ(t.messages[2].blocks.size(), 2u);
  EXPECT_EQ(t.messages[2].blocks[0].kind, BlockKind::kToolResult);
  EXPECT_EQ(t.messages[2].blocks[0].text, kBranch);
  EXPECT_EQ(t.messages[2].blocks[1].kind, BlockKind::kText);
  EXPECT_TRUE(ValidateTranscript(t).ok());
  EXPECT_EQ(request->Render(RenderPlan{}), body.dump());
  RenderPlan same;
  for (size_t b = 0; b < 2; ++b) same.blocks[{2, b}] = request->RewriteBlock(2, b, {});
  EXPECT_EQ(request->Render(same), body.dump());
}

TEST(OpenAIResponsesRequestTest, RenderingEveryBlockUnchangedGivesTheSameBytes) {
  // Hand-written: blanks, escapes, number spellings, a typeless message, string and part
  // contents, an image, a custom tool call with an array output, provider-run and unknown items.
  const std::string body =
      "{ \"model\" : \"m\", \"temperature\": 0.50, \"instructions\": \"be \\u0062rief\",\n"
      " \"input\" : [ \n"
      "  {\"role\": \"system\", \"content\": \"sys\"},\n"
      "  {\"role\":\"user\",\"content\":[ {\"type\":\"input_text\",\"text\":\"caf\\u00e9\"} ,"
      " {\"type\":\"input_image\",\"image_url\":\"data:x\",\"detail\":\"low\"},"
      " {\"type\":\"from_the_future\",\"x\":[1e1]} ]},\n"
      "  "
      "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"encrypted_content\":\"AB\\/c\"},\n"
      "  {\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\"},\n"
      "  {\"type\":\"custom_tool_call\",\"call_id\":\"t2\",\"name\":\"apply_patch\","
      "\"input\":\"*** x\"},\n"
      "  {\"type\":\"custom_tool_call_output\",\"call_id\":\"t2\",\"output\":[{\"type\":"
      "\"input_text\",\"text\":\"a\"},{\"type\":\"input_text\",\"text\":\"b\"}]},\n"
      "  {\"type\":\"item_reference\",\"id\":\"msg_9\"},\n"
      "  {\"type\":\"message\",\"role\":\"developer\",\"content\":\"mid-way\"},\n"
      "  {\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
      "\"text\":\"done\",\"annotations\":[]},{\"type\":\"refusal\",\"refusal\":\"no\"}]}\n"
      " ] , \"zzz\": [ -0, \"\\/\" ], \"store\": false }";
  auto request = Parse(body);
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->preamble(), 1u);
  const Transcript& t = request->transcript();
  ASSERT_EQ(t.messages.size(), 6u);
  EXPECT_EQ(t.messages[0].blocks.size(), 3u);
  EXPECT_EQ(t.messages[0].blocks[1].kind, BlockKind::kMedia);
  EXPECT_EQ(t.messages[0].blocks[2].kind, BlockKind::kOther);
  // reasoning, the provider-run search and the custom call: one assistant message.
  ASSERT_EQ(t.messages[1].blocks.size(), 3u);
  EXPECT_EQ(t.messages[1].blocks[0].kind, BlockKind::kThinking);
  EXPECT_EQ(t.messages[1].blocks[1].kind, BlockKind::kOther);
  EXPECT_EQ(t.messages[1].blocks[2].tool_name, "apply_patch");
  EXPECT_EQ(request->BlockText(1, 2), "*** x");
  EXPECT_EQ(request->BlockText(2, 0), "a\nb");
  EXPECT_EQ(t.messages[3].role, Role::kOther);   // the item reference
  EXPECT_EQ(t.messages[4].role, Role::kSystem);  // a developer message mid-way
  EXPECT_EQ(request->BlockText(5, 1), "no");

  EXPECT_EQ(request->Render(RenderPlan{}), body);
  EXPECT_EQ(request->Render(testing::UnchangedBlocksPlan(*request)), body);
  // Changing one text changes only its token.
  RenderPlan one;
  const std::vector<TextSpan>& spans = request->TextSpans(2, 0);
  ASSERT_EQ(spans.size(), 2u);
  one.blocks[{2, 0}] = request->RewriteBlock(2, 0, {{spans[1], "\"B\""}});
  std::string changed = body;
  changed.replace(spans[1].begin, spans[1].end - spans[1].begin, "\"B\"");
  EXPECT_EQ(request->Render(one), changed);
}

TEST(OpenAIResponsesRequestTest, AReturnedBranchFoldsToOneOutputPerCall) {
  const std::string original = Conversation(true, false).dump();
  auto request = Parse(original);
  ASSERT_NE(request, nullptr);
  FoldPlan plan = PlanReturned(request->transcript());
  ASSERT_EQ(plan.edits.size(), 1u);
  ASSERT_EQ(plan.new_records.size(), 1u);
  EXPECT_EQ(plan.edits[0].create_message, 1u);
  EXPECT_EQ(plan.edits[0].end_message, 6u);
  EXPECT_THAT(plan.edits[0].stub_call_ids, ElementsAre("b1"));

  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  json sent = json::parse(out);
  json input = sent["input"];
  json original_input = json::parse(original)["input"];
  ASSERT_EQ(input.size(), 8u) << out;
  // Everything up to the end of the create turn (its reasoning item included) is byte-identical.
  const std::string prefix =
      original.substr(0, original.find("{\"type\":\"function_call_output\""));
  EXPECT_EQ(out.substr(0, prefix.size()), prefix);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(input[i], original_input[i]) << i;
  EXPECT_EQ(input[5]["type"], "function_call_output");
  EXPECT_EQ(input[5]["call_id"], "c1");
  EXPECT_THAT(input[5]["output"].get<std::string>(), HasSubstr("bug in a.py:3"));
  EXPECT_THAT(input[5]["output"].get<std::string>(), HasSubstr("690 tokens folded away"));
  EXPECT_EQ(input[6]["call_id"], "b1");
  EXPECT_EQ(input[6]["output"], StubResultText(kBranch));
  // The branch's own turns (their reasoning items too) are gone; the user text after the return
  // is not: it is the last item.
  EXPECT_EQ(input[7], original_input[13]);
  EXPECT_EQ(out.find("rs_2"), std::string::npos);
  EXPECT_EQ(out.find("xxxxxxxx"), std::string::npos);
  EXPECT_EQ(sent["include"][0], "reasoning.encrypted_content");
  EXPECT_EQ(sent["instructions"], "You are Codex.");
  ExpectPaired(input);
  EXPECT_TRUE(ValidateTranscript(request->RenderedTranscript(render)).ok());
  auto reread = Parse(out);
  ASSERT_NE(reread, nullptr);
  EXPECT_TRUE(ValidateTranscript(reread->transcript()).ok());
}

TEST(OpenAIResponsesRequestTest, KeptUserTextFollowsTheOutputsAndLaterRequestsFoldAlike) {
  const std::string original = Conversation(true, false).dump();
  auto request = Parse(original);
  FoldPlan plan = PlanReturned(request->transcript());
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_EQ(plan.edits[0].kept_blocks.size(), 1u);
  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  json input = json::parse(out)["input"];
  EXPECT_EQ(input.back(), json::parse(original)["input"][13]);

  const std::string next_body = Conversation(true, true).dump();
  auto next = Parse(next_body);
  std::map<std::string, FoldRecord> records{{"c1", plan.new_records[0]}};
  FoldPlan again = PlanFolds(next->transcript(), records, [](const std::string&) {
    ADD_FAILURE() << "a stored fold needs no lookup";
    return std::optional<BranchFacts>();
  });
  ASSERT_EQ(again.edits.size(), 1u);
  RenderPlan render2;
  render2.folds = again.edits;
  std::string out2 = next->Render(render2);
  const std::string common = out.substr(0, out.find("],\"tools\""));
  EXPECT_EQ(out2.substr(0, common.size()), common);
  ExpectPaired(json::parse(out2)["input"]);
  EXPECT_EQ(next->Render(render2), out2);
}

TEST(OpenAIResponsesRequestTest, ACustomToolCallOfTheCreateTurnGetsACustomOutputStub) {
  json body = Conversation(true, false);
  json& input = body["input"];
  input[4] = {{"type", "custom_tool_call"},
              {"call_id", "b1"},
              {"name", "apply_patch"},
              {"input", "*** Begin Patch"}};
  input[6] = {{"type", "custom_tool_call_output"}, {"call_id", "b1"}, {"output", "done"}};
  auto request = Parse(body.dump());
  FoldPlan plan = PlanReturned(request->transcript());
  ASSERT_EQ(plan.edits.size(), 1u);
  RenderPlan render;
  render.folds = plan.edits;
  json sent = json::parse(request->Render(render))["input"];
  EXPECT_EQ(sent[5]["type"], "function_call_output");
  EXPECT_EQ(sent[6]["type"], "custom_tool_call_output");
  EXPECT_EQ(sent[6]["call_id"], "b1");
  ExpectPaired(sent);
}

TEST(OpenAIResponsesRequestTest, UnknownItemsInsideTheBranchFoldAndUserTextStays) {
  for (const json& inside :
       {json{{"type", "web_search_call"}, {"id", "ws_1"}, {"status", "completed"}},
        json{{"type", "item_reference"}, {"id", "msg_1"}},
        json{{"type", "tool_search_output"}, {"call_id", "s1"}, {"tools", json::array()}}}) {
    json body = Conversation(true, false);
    body["input"].insert(body["input"].begin() + 8, inside);
    auto request = Parse(body.dump());
    FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
      return std::optional<BranchFacts>(Returned());
    });
    EXPECT_EQ(plan.edits.size(), 1u) << inside.dump();
    EXPECT_TRUE(plan.skipped.empty()) << inside.dump();
  }
  json body = Conversation(true, false);
  body["input"].insert(body["input"].begin() + 10, UserText("actually, also b.py"));
  auto request = Parse(body.dump());
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  EXPECT_NE(out.find("actually, also b.py"), std::string::npos);
  ExpectPaired(json::parse(out)["input"]);
}

TEST(OpenAIResponsesRequestTest, AppendedNoticesAreAUserMessageItemOfInputText) {
  auto request = Parse(Conversation(false, false).dump());
  RenderPlan plan;
  const size_t tail = request->transcript().messages.size() - 1;
  plan.appends[tail] =
      R"({"type":"text","text":"[contextd] budget \"80%\" used"},{"type":"text","text":"2"})";
  plan.appends[tail - 1] = R"({"type":"text","text":"never on an assistant message"})";
  const std::string out = request->Render(plan);
  json sent = json::parse(out);
  json last = sent["input"].back();
  EXPECT_EQ(last, json::parse(R"({"type":"message","role":"user","content":[
      {"type":"input_text","text":"[contextd] budget \"80%\" used"},
      {"type":"input_text","text":"2"}]})"));
  EXPECT_EQ(sent["input"].size(), json::parse(request->body())["input"].size() + 1);
  EXPECT_THAT(out, Not(HasSubstr("never on an assistant")));
  ExpectPaired(sent["input"]);
}

TEST(OpenAIResponsesRequestTest, ProviderKeptHistoryAndStringInputs) {
  auto previous = Parse(R"({"model":"m","previous_response_id":"resp_1","input":[)"
                        R"({"type":"function_call_output","call_id":"c","output":"x"}]})");
  EXPECT_EQ(previous->unfoldable_reason(), "previous_response_id");
  auto conversation = Parse(R"({"conversation":{"id":"conv_1"},"input":"hi"})");
  EXPECT_EQ(conversation->unfoldable_reason(), "conversation");
  auto null_previous = Parse(R"({"previous_response_id":null,"conversation":null,"input":[]})");
  EXPECT_EQ(null_previous->unfoldable_reason(), "");

  // A string input is one user message of one text block: scrubbed like any, never extended.
  const std::string body = R"({"model":"m", "input": "say \"hi\"", "stream":true})";
  auto text = Parse(body);
  ASSERT_EQ(text->transcript().messages.size(), 1u);
  EXPECT_EQ(text->transcript().messages[0].role, Role::kUser);
  EXPECT_EQ(text->BlockText(0, 0), "say \"hi\"");
  EXPECT_NE(text->FirstMessageKey(), "");
  RenderPlan plan;
  plan.appends[0] = R"({"type":"text","text":"note"})";
  EXPECT_EQ(text->Render(plan), body);
  plan.blocks[{0, 0}] = "\"say [REDACTED]\"";
  EXPECT_EQ(text->Render(plan), R"({"model":"m", "input": "say [REDACTED]", "stream":true})");

  auto none = Parse(R"({"model":"m","prompt":{"id":"pmpt_1"}})");
  EXPECT_TRUE(none->transcript().messages.empty());
  EXPECT_EQ(none->FirstMessageKey(), "");
}

TEST(OpenAIResponsesRequestTest, KeysDifferFromTheChatAdapterAndTellItemsApart) {
  auto responses = Parse(R"({"input":[{"role":"user","content":"hi"}]})");
  auto chat = OpenAIChatRequest::Parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_NE(responses->FirstMessageKey(), (*chat)->FirstMessageKey());
  auto two = Parse(R"({"input":[{"role":"user","content":"hi"},{"role":"user","content":[]}]})");
  EXPECT_NE(responses->FirstMessageKey(), two->FirstMessageKey());
  auto typed = Parse(R"({"input":[{"type":"message","role":"user","content":"hi"}]})");
  // A message's members beside its content are not its key (as a Chat message's `name`): the
  // typeless and typed forms of one message are the same message.
  EXPECT_EQ(responses->FirstMessageKey(), typed->FirstMessageKey());
  auto string = Parse(R"({"input":"hi"})");
  EXPECT_NE(responses->FirstMessageKey(), string->FirstMessageKey());
  auto developer =
      Parse(R"({"input":[{"role":"developer","content":"s"},{"role":"user","content":"hi"}]})");
  EXPECT_EQ(responses->FirstMessageKey(), developer->FirstMessageKey());
}

TEST(OpenAIResponsesRequestTest, RejectsWhatIsNotAResponsesRequest) {
  for (const char* bad : {"{", "[]", "\"x\"", "{\"input\":{}}", "{\"input\":[1]}", "{\"input\":7}",
                          "{\"input\":[{\"role\":\"user\"},null]}", "{\"input\":[]} x"}) {
    auto parsed = OpenAIResponsesRequest::Parse(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
  }
  // Odd but valid JSON is read, never refused: the provider judges it.
  for (const char* odd :
       {"{\"input\":[]}", "{\"input\":[{}]}", "{}", "{\"input\":null,\"model\":7}",
        "{\"input\":[{\"type\":\"function_call\"}]}",
        "{\"input\":[{\"type\":\"function_call_output\",\"output\":[1,{\"type\":\"input_text\"}]}]"
        "}",
        "{\"input\":[{\"role\":\"user\",\"content\":[null]}]}",
        "{\"input\":[{\"type\":\"reasoning\",\"summary\":{}}]}"}) {
    auto parsed = OpenAIResponsesRequest::Parse(odd);
    ASSERT_TRUE(parsed.ok()) << odd << ": " << parsed.status();
    (*parsed)->ComputeKeys();
    EXPECT_EQ((*parsed)->Render(RenderPlan{}), odd);
  }
}

using testing::ByteCounter;
using testing::WordScrubber;

TEST(OpenAIResponsesRequestTest, TheContextManagerFoldsAndScrubsAResponsesConversation) {
  model::testing::InMemoryConversationStore store;
  WordScrubber scrubber;
  ByteCounter counter;
  bool ended = false;
  model::testing::FakeBranchLedger ledger([&](const std::string&, const std::string& id) {
    BranchFacts facts = Returned();
    facts.ended = ended;
    return id == kBranch ? std::optional<BranchFacts>(facts) : std::nullopt;
  });
  ContextManager manager({}, store, scrubber, counter, &ledger);
  auto apply = [&](const json& body) {
    auto parsed = manager.Parse(ModelApi::kOpenAIResponses, "local", "", body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    auto applied = manager.Apply("local", "", *parsed, 1000);
    EXPECT_TRUE(applied.ok()) << applied.status();
    manager.SaveFrontier(*applied);
    return *std::move(applied);
  };
  json open = Conversation(false, false);
  open["input"][9]["output"] = "token SECRET123 and more";
  AppliedRequest first = apply(open);
  EXPECT_EQ(first.redactions_new, 1);
  EXPECT_EQ(first.open_branch_id, kBranch);
  EXPECT_THAT(first.body, Not(HasSubstr("SECRET123")));
  EXPECT_THAT(first.body, HasSubstr(R"("output":"token [REDACTED] and more")"));
  // The reasoning items go as sent.
  for (const char* id : {"rs_1", "rs_2"}) {
    EXPECT_THAT(first.body, HasSubstr(Reasoning(id).dump())) << id;
  }

  ended = true;
  json returned = Conversation(true, false);
  returned["input"][9]["output"] = "token SECRET123 and more";
  AppliedRequest second = apply(returned);
  EXPECT_EQ(second.folds_new, 1);
  EXPECT_EQ(second.key, first.key);
  json sent = json::parse(second.body)["input"];
  ASSERT_EQ(sent.size(), 8u) << second.body;
  EXPECT_EQ(sent[5]["call_id"], "c1");
  EXPECT_THAT(sent[5]["output"].get<std::string>(), HasSubstr("bug in a.py:3"));
  ExpectPaired(sent);
  // The prefix up to the create turn's end is what the first request carried.
  const size_t cut = first.body.find("{\"type\":\"function_call_output\"");
  EXPECT_EQ(second.body.substr(0, cut), first.body.substr(0, cut));
}

}  // namespace
}  // namespace contextd::model
