#include "model/openai_chat_request.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/fold.h"
#include "model/testing/render_plans.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kBranch = "br_0123456789abcdef0123456789abcdef";

json Call(const std::string& id, const std::string& name, const json& arguments) {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", arguments.dump()}}}};
}
json Assistant(json calls, json content = nullptr) {
  json m = {{"role", "assistant"}, {"content", std::move(content)}};
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  return m;
}
json Tool(const std::string& id, const std::string& text) {
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", text}};
}
json User(json content) { return {{"role", "user"}, {"content", std::move(content)}}; }

// A Chat conversation: system prompt, the task, a branch opened in the same turn as a bash call,
// a read inside it, the return, then (with `after`) what follows.
json Conversation(bool returned, bool after) {
  json messages = json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a coding agent."}});
  messages.push_back(User("fix the bug"));
  messages.push_back(Assistant(json::array({Call("c1", "contextd__branch_create",
                                                 {{"description", "find"}, {"prompt", "p"}}),
                                            Call("b1", "bash", {{"command", "ls"}})}),
                               "Let me look."));
  messages.push_back(Tool("c1", "{\"branch_id\":\"" + kBranch + "\",\"depth\":0}"));
  messages.push_back(Tool("b1", "a.py b.py"));
  messages.push_back(Assistant(json::array({Call("r1", "read", {{"file", "a.py"}})})));
  messages.push_back(Tool("r1", std::string(2000, 'x')));
  if (returned) {
    messages.push_back(Assistant(
        json::array({Call("ret1", "contextd__branch_return", {{"message", "bug in a.py:3"}})})));
    messages.push_back(Tool("ret1", "{\"branch_id\":\"" + kBranch + "\"}"));
    messages.push_back(User(
        json::array({{{"type", "text"}, {"text", "<system-reminder>todo</system-reminder>"}}})));
  }
  if (after) {
    messages.push_back(Assistant(json::array(), "fixing a.py"));
    messages.push_back(User("go on"));
  }
  return {{"model", "gpt-double"},
          {"messages", messages},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}},
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

std::unique_ptr<OpenAIChatRequest> Parse(const std::string& body) {
  auto request = OpenAIChatRequest::Parse(body);
  EXPECT_TRUE(request.ok()) << request.status();
  if (!request.ok()) return nullptr;
  (*request)->ComputeKeys();
  return *std::move(request);
}

// Fails unless every tool call of an assistant message is answered by a tool message among those
// right after it (before any other assistant message), and every tool message answers one.
void ExpectPaired(const json& messages) {
  std::set<std::string> open;
  for (const json& m : messages) {
    if (m["role"] == "assistant") {
      EXPECT_TRUE(open.empty()) << "unanswered before " << m.dump();
      open.clear();
      if (m.contains("tool_calls")) {
        for (const json& call : m["tool_calls"]) open.insert(call["id"].get<std::string>());
      }
    } else if (m["role"] == "tool") {
      EXPECT_EQ(open.erase(m["tool_call_id"].get<std::string>()), 1u) << m.dump();
    }
  }
  EXPECT_TRUE(open.empty());
}

TEST(OpenAIChatRequestTest, ReadsTheNeutralView) {
  auto request = Parse(Conversation(true, false).dump());
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(request->model(), "gpt-double");
  EXPECT_EQ(request->preamble(), 1u);
  const Transcript& t = request->transcript();
  ASSERT_EQ(t.messages.size(), 7u);
  EXPECT_EQ(t.messages[0].role, Role::kUser);
  EXPECT_EQ(t.messages[0].blocks[0].text, "fix the bug");
  const Message& create = t.messages[1];
  EXPECT_EQ(create.role, Role::kAssistant);
  ASSERT_EQ(create.blocks.size(), 3u);
  EXPECT_EQ(create.blocks[0].kind, BlockKind::kText);
  EXPECT_EQ(create.blocks[1].kind, BlockKind::kToolCall);
  EXPECT_EQ(create.blocks[1].call_id, "c1");
  EXPECT_EQ(create.blocks[1].tool_name, "contextd__branch_create");
  EXPECT_EQ(create.blocks[1].text, R"({"description":"find","prompt":"p"})");
  EXPECT_EQ(create.blocks[2].text, "");  // only branch calls are read at parse time
  EXPECT_EQ(request->BlockText(1, 2), R"({"command":"ls"})");
  // The two tool messages after it are one user message, results in order.
  const Message& results = t.messages[2];
  EXPECT_EQ(results.role, Role::kUser);
  ASSERT_EQ(results.blocks.size(), 2u);
  EXPECT_EQ(results.blocks[0].kind, BlockKind::kToolResult);
  EXPECT_EQ(results.blocks[0].call_id, "c1");
  EXPECT_THAT(results.blocks[0].text, HasSubstr(kBranch));
  EXPECT_EQ(results.blocks[1].call_id, "b1");
  EXPECT_EQ(request->BlockText(2, 1), "a.py b.py");
  // The return's result and the user text after it are one message.
  const Message& end = t.messages[6];
  ASSERT_EQ(end.blocks.size(), 2u);
  EXPECT_EQ(end.blocks[0].kind, BlockKind::kToolResult);
  EXPECT_EQ(end.blocks[1].kind, BlockKind::kText);
  EXPECT_TRUE(ValidateTranscript(t).ok());
  std::set<std::string> keys;
  for (const Message& m : t.messages) keys.insert(m.key);
  EXPECT_EQ(keys.size(), t.messages.size());
}

TEST(OpenAIChatRequestTest, RenderingEveryBlockUnchangedGivesTheSameBytes) {
  // Hand-written: blanks, escapes, number spellings and unknown fields and part types.
  const std::string body =
      "{ \"model\" : \"m\", \"temperature\": 0.50,\n \"messages\" : [ \n"
      "  {\"role\": \"developer\", \"content\": \"be brief\"},\n"
      "  {\"role\":\"user\",\"name\":\"ann\",\"content\":[ "
      "{\"type\":\"text\",\"text\":\"caf\\u00e9\"} ,"
      " {\"type\":\"image_url\",\"image_url\":{\"url\":\"data:x\",\"detail\":\"low\"}},"
      " {\"type\":\"from_the_future\",\"x\":[1e1]} ]},\n"
      "  {\"role\":\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"id\":\"t1\","
      "\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"p\\\":1}\"}},"
      "{\"id\":\"t2\",\"type\":\"custom\",\"custom\":{\"name\":\"apply_patch\",\"input\":\"*** "
      "x\"}}]},\n"
      "  "
      "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
      "{\"type\":\"text\",\"text\":\"b\"}]},\n"
      "  {\"role\":\"tool\",\"tool_call_id\":\"t2\",\"content\":\"ok\"},\n"
      "  {\"role\":\"system\",\"content\":\"mid-way\"},\n"
      "  {\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"},"
      "{\"type\":\"refusal\",\"refusal\":\"no\"}],\"audio\":{\"id\":\"au_1\"}}\n"
      " ] , \"zzz\": [ -0, \"\\/\" ] }";
  auto request = Parse(body);
  ASSERT_NE(request, nullptr);
  const Transcript& t = request->transcript();
  ASSERT_EQ(t.messages.size(), 5u);
  EXPECT_EQ(t.messages[0].blocks.size(), 3u);
  EXPECT_EQ(t.messages[0].blocks[1].kind, BlockKind::kMedia);
  EXPECT_EQ(t.messages[0].blocks[2].kind, BlockKind::kOther);
  EXPECT_EQ(t.messages[1].blocks[1].tool_name, "apply_patch");
  EXPECT_EQ(request->BlockText(1, 1), "*** x");
  EXPECT_EQ(request->BlockText(2, 0), "a\nb");
  EXPECT_EQ(t.messages[3].role, Role::kSystem);
  EXPECT_EQ(request->BlockText(4, 1), "no");

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

TEST(OpenAIChatRequestTest, AReturnedBranchFoldsToOneToolMessagePerCall) {
  const std::string original = Conversation(true, false).dump();
  auto request = Parse(original);
  ASSERT_NE(request, nullptr);
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string& id) {
    EXPECT_EQ(id, kBranch);
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  ASSERT_EQ(plan.new_records.size(), 1u);
  EXPECT_EQ(plan.new_records[0].end_call_id, "ret1");
  EXPECT_EQ(plan.edits[0].create_message, 1u);
  EXPECT_EQ(plan.edits[0].end_message, 6u);
  EXPECT_THAT(plan.edits[0].stub_call_ids, ElementsAre("b1"));
  EXPECT_THAT(plan.edits[0].kept_blocks, ElementsAre(std::make_pair(size_t{6}, size_t{1})));

  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  json sent = json::parse(out);
  json messages = sent["messages"];
  ASSERT_EQ(messages.size(), 6u) << out;
  // The turn that opened the branch is byte-identical; everything before it too.
  json input = json::parse(original);
  const std::string prefix = original.substr(0, original.find("{\"role\":\"tool\""));
  EXPECT_EQ(out.substr(0, prefix.size()), prefix);
  EXPECT_EQ(messages[2], input["messages"][2]);
  EXPECT_EQ(messages[3]["role"], "tool");
  EXPECT_EQ(messages[3]["tool_call_id"], "c1");
  EXPECT_THAT(messages[3]["content"].get<std::string>(), HasSubstr("bug in a.py:3"));
  EXPECT_THAT(messages[3]["content"].get<std::string>(), HasSubstr("690 tokens folded away"));
  EXPECT_EQ(messages[4]["tool_call_id"], "b1");
  EXPECT_EQ(messages[4]["content"], StubResultText(kBranch));
  EXPECT_EQ(messages[5], input["messages"][9]);  // the user text after the return
  EXPECT_EQ(out.find("xxxxxxxx"), std::string::npos);
  EXPECT_EQ(sent["unknown_field"]["kept"], true);
  EXPECT_EQ(sent["stream_options"]["include_usage"], true);
  ExpectPaired(messages);
  EXPECT_TRUE(ValidateTranscript(request->RenderedTranscript(render)).ok());
  auto reread = Parse(out);
  ASSERT_NE(reread, nullptr);
  EXPECT_TRUE(ValidateTranscript(reread->transcript()).ok());

  // The next request of the conversation folds by the stored record to the same bytes, up to
  // where it grew.
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
  const std::string common = out.substr(0, out.rfind("]"));
  EXPECT_EQ(out2.substr(0, common.size()), common);
  ExpectPaired(json::parse(out2)["messages"]);
  EXPECT_EQ(next->Render(render2), out2);
}

TEST(OpenAIChatRequestTest, UserTextAndSystemMessagesInsideTheBranchFoldAroundWhatStays) {
  json body = Conversation(true, false);
  // A person's words between the read's result and the return, and a system message.
  body["messages"].insert(body["messages"].begin() + 7, User("actually, also b.py"));
  body["messages"].insert(body["messages"].begin() + 7,
                          json{{"role", "system"}, {"content", "note"}});
  auto request = Parse(body.dump());
  FoldPlan plan = PlanFolds(request->transcript(), {}, [](const std::string&) {
    return std::optional<BranchFacts>(Returned());
  });
  ASSERT_EQ(plan.edits.size(), 1u);
  EXPECT_TRUE(plan.skipped.empty());
  RenderPlan render;
  render.folds = plan.edits;
  std::string out = request->Render(render);
  EXPECT_EQ(out.find("\"note\""), std::string::npos);
  json sent = json::parse(out)["messages"];
  ExpectPaired(sent);
  bool kept = false;
  for (const json& m : sent) kept |= m["role"] == "user" && m["content"] == "actually, also b.py";
  EXPECT_TRUE(kept) << out;
}

TEST(OpenAIChatRequestTest, AppendedNoticesAreAUserMessageOfTheirOwn) {
  auto request = Parse(Conversation(false, false).dump());
  RenderPlan plan;
  const size_t tail = request->transcript().messages.size() - 1;
  plan.appends[tail] = R"({"type":"text","text":"[contextd] budget 80% used"})";
  plan.appends[tail - 1] = R"({"type":"text","text":"never on an assistant message"})";
  json sent = json::parse(request->Render(plan));
  json last = sent["messages"].back();
  EXPECT_EQ(last["role"], "user");
  EXPECT_EQ(last["content"][0]["text"], "[contextd] budget 80% used");
  EXPECT_EQ(sent["messages"].size(), json::parse(request->body())["messages"].size() + 1);
  ExpectPaired(sent["messages"]);
}

TEST(OpenAIChatRequestTest, KeysTellRunsApartAndDifferFromTheMessagesAdapter) {
  // One user message "hi" and the same text sent as two messages are different messages.
  auto one = Parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  auto two = Parse(R"({"messages":[{"role":"user","content":"hi"},{"role":"user","content":[]}]})");
  EXPECT_NE(one->FirstMessageKey(), two->FirstMessageKey());
  // The system prompt is not part of the thread's first message.
  auto system =
      Parse(R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]})");
  EXPECT_EQ(one->FirstMessageKey(), system->FirstMessageKey());
  auto empty = Parse(R"({"messages":[{"role":"system","content":"s"}]})");
  EXPECT_EQ(empty->FirstMessageKey(), "");
  EXPECT_TRUE(empty->transcript().messages.empty());
}

TEST(OpenAIChatRequestTest, RejectsWhatIsNotAChatRequest) {
  for (const char* bad :
       {"{", "[]", "\"x\"", "{\"messages\":{}}", "{\"messages\":[1]}", "{\"model\":\"m\"}",
        "{\"messages\":[{\"role\":\"user\"},null]}", "{\"messages\":[]} x"}) {
    auto parsed = OpenAIChatRequest::Parse(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
  }
  // Odd but valid JSON is read, never refused: the provider judges it.
  for (const char* odd :
       {"{\"messages\":[]}", "{\"messages\":[{}]}",
        "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}",
        "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1,{}]}]}",
        "{\"messages\":[{\"role\":\"tool\",\"content\":[1,{\"type\":\"text\"}]}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":[null]}],\"model\":7}",
        "{\"messages\":[{\"role\":\"function\",\"name\":\"f\",\"content\":\"x\"}]}"}) {
    auto parsed = OpenAIChatRequest::Parse(odd);
    ASSERT_TRUE(parsed.ok()) << odd << ": " << parsed.status();
    (*parsed)->ComputeKeys();
    EXPECT_EQ((*parsed)->Render(RenderPlan{}), odd);
  }
}

}  // namespace
}  // namespace contextd::model
