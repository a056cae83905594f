// Lessons at the start of a task (lessons.h): the context manager asks its LessonSource at a new
// user turn and appends the lessons there, repeated byte for byte afterwards.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/context_manager.h"
#include "model/openai_chat_request.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/in_memory_conversation_store.h"
#include "model/testing/simple_parts.h"
#include "nlohmann/json.hpp"
#include "scrub/scrubber.h"

namespace contextd::model {
namespace {

using json = nlohmann::ordered_json;
using testing::ByteCounter;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::WordScrubber;

// Hands out the lessons of `items` not excluded, one per task, and records what it was asked.
class FakeLessons : public LessonSource {
 public:
  std::vector<std::string> items = {"mem_a", "mem_b", "mem_c"};
  absl::Status fail = absl::OkStatus();
  std::vector<LessonQuery> asked;
  std::vector<std::vector<std::string>> injected;

  absl::StatusOr<LessonPick> Pick(const LessonQuery& query) override {
    asked.push_back(query);
    if (!fail.ok()) return fail;
    LessonPick pick;
    for (const std::string& id : items) {
      if (query.exclude.count(id) != 0) continue;
      pick.ids = {id};
      pick.text = "<contextd-lessons>\n- [" + id + "] lesson\n</contextd-lessons>";
      pick.tokens = 9;
      break;
    }
    return pick;
  }
  void Injected(const LessonQuery&, const LessonPick& pick) override {
    injected.push_back(pick.ids);
  }
};

json Text(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
json Msg(const std::string& role, json content) { return {{"role", role}, {"content", content}}; }

// A Messages conversation of a client that offers tools (or not).
struct Conversation {
  json messages = json::array();
  bool tools = true;
  void User(json blocks) { messages.push_back(Msg("user", std::move(blocks))); }
  void Assistant(json blocks) { messages.push_back(Msg("assistant", std::move(blocks))); }
  void ToolLoop(const std::string& id) {
    Assistant(json::array(
        {{{"type", "tool_use"}, {"id", id}, {"name", "Read"}, {"input", json::object()}}}));
    User(json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "file text"}}}));
  }
  std::shared_ptr<ModelRequest> Request() const {
    json body = {{"model", "m"}, {"max_tokens", 10}, {"system", "sys"}, {"messages", messages}};
    if (tools) body["tools"] = json::array({{{"name", "Read"}, {"input_schema", json::object()}}});
    auto parsed = AnthropicRequest::Parse(body.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return *std::move(parsed);
  }
};

struct Fixture {
  model::testing::InMemoryConversationStore store;
  ByteCounter counter;
  WordScrubber scrubber;
  FakeLessons lessons;
  std::vector<folding::ToolCallRecord> recorded;
  model::testing::FakeBranchLedger ledger{
      nullptr, nullptr,
      [this](const folding::SessionKey&, const std::vector<folding::ToolCallRecord>& calls) {
        recorded.insert(recorded.end(), calls.begin(), calls.end());
      }};
  ContextManagerOptions options;
  std::unique_ptr<ContextManager> manager = Make();
  std::unique_ptr<ContextManager> Make() {
    return std::make_unique<ContextManager>(options, store, scrubber, counter, &ledger, &lessons);
  }
  json Apply(const Conversation& c, bool allow = true, const std::string& session = "s1",
             AppliedRequest* out = nullptr) {
    auto applied = manager->Apply("local", session, c.Request(), 1000, {}, "proj", allow);
    EXPECT_TRUE(applied.ok()) << applied.status();
    if (out != nullptr) *out = *applied;
    manager->SaveFrontier(*applied);
    return json::parse(applied->body);
  }
};

std::string LessonOf(const json& body, size_t m) {
  const json& content = body["messages"][m]["content"];
  return content.is_array() && !content.empty() ? content.back().value("text", "") : "";
}

TEST(ContextManagerLessons, AppendedToTheFirstTaskAndRepeatedByteForByte) {
  Fixture f;
  Conversation c;
  c.User(json::array(
      {Text("<system-reminder>CLAUDE.md says SECRET1</system-reminder>"), Text("fix the parser")}));
  AppliedRequest applied;
  json first = f.Apply(c, true, "s1", &applied);
  ASSERT_EQ(f.lessons.asked.size(), 1u);
  EXPECT_EQ(f.lessons.asked[0].task, "fix the parser");  // the client's reminder left out
  EXPECT_EQ(f.lessons.asked[0].project, "proj");
  EXPECT_EQ(f.lessons.asked[0].max_tokens, 1500);
  EXPECT_THAT(applied.lessons_injected, ElementsAre("mem_a"));
  ASSERT_EQ(first["messages"][0]["content"].size(), 3u);
  const std::string block = first["messages"][0]["content"][2].dump();
  EXPECT_THAT(block, HasSubstr("[mem_a] lesson"));
  EXPECT_THAT(f.lessons.injected, ElementsAre(ElementsAre("mem_a")));
  ASSERT_EQ(f.recorded.size(), 1u);
  EXPECT_EQ(f.recorded[0].tool, "contextd_lessons");
  EXPECT_THAT(f.recorded[0].arguments, HasSubstr("mem_a"));

  // The tool loop that follows: no new lessons, the same bytes at the same message.
  for (const char* id : {"t1", "t2"}) {
    c.ToolLoop(id);
    json later = f.Apply(c);
    EXPECT_EQ(later["messages"][0]["content"][2].dump(), block);
    EXPECT_EQ(later["messages"].size(), c.messages.size());
  }
  EXPECT_EQ(f.lessons.asked.size(), 1u);

  // After a restart: the stored decision, the same bytes.
  f.manager = f.Make();
  c.ToolLoop("t3");
  EXPECT_EQ(f.Apply(c)["messages"][0]["content"][2].dump(), block);
  EXPECT_EQ(f.lessons.asked.size(), 1u);
}

TEST(ContextManagerLessons, ANewTaskGetsItsOwnLessonsNeverAnItemTwice) {
  Fixture f;
  Conversation c;
  c.User(json::array({Text("first task")}));
  f.Apply(c);
  c.ToolLoop("t1");
  f.Apply(c);
  c.Assistant(json::array({Text("done")}));
  c.User(json::array({Text("second task")}));
  json second = f.Apply(c);
  ASSERT_EQ(f.lessons.asked.size(), 2u);
  EXPECT_EQ(f.lessons.asked[1].task, "second task");
  EXPECT_THAT(f.lessons.asked[1].exclude, ElementsAre("mem_a"));
  EXPECT_THAT(LessonOf(second, 0), HasSubstr("[mem_a]"));
  EXPECT_THAT(LessonOf(second, 4), HasSubstr("[mem_b]"));
  // A subagent's thread of the same conversation (another first message) is not given either.
  Conversation sub;
  sub.User(json::array({Text("subagent task")}));
  f.Apply(sub);
  ASSERT_EQ(f.lessons.asked.size(), 3u);
  EXPECT_THAT(f.lessons.asked[2].exclude, ElementsAre("mem_a", "mem_b"));
  // After a restart a thread still knows its own.
  f.manager = f.Make();
  c.Assistant(json::array({Text("done")}));
  c.User(json::array({Text("third task")}));
  f.Apply(c);
  EXPECT_THAT(f.lessons.asked.back().exclude, ElementsAre("mem_a", "mem_b"));
}

TEST(ContextManagerLessons, NoneWithoutToolsOffOrWhenNothingIsRelevant) {
  Fixture f;
  Conversation side;  // a title request: no tools
  side.tools = false;
  side.User(json::array({Text("write a title")}));
  EXPECT_EQ(f.Apply(side)["messages"][0]["content"].size(), 1u);
  EXPECT_TRUE(f.lessons.asked.empty());

  Conversation off;
  off.User(json::array({Text("a task")}));
  EXPECT_EQ(f.Apply(off, /*allow=*/false, "s2")["messages"][0]["content"].size(), 1u);
  EXPECT_TRUE(f.lessons.asked.empty());

  f.lessons.items.clear();  // nothing above the bank's floor
  Conversation none;
  none.User(json::array({Text("another task")}));
  AppliedRequest applied;
  EXPECT_EQ(f.Apply(none, true, "s3", &applied)["messages"][0]["content"].size(), 1u);
  EXPECT_TRUE(applied.lessons_injected.empty());
  EXPECT_TRUE(f.lessons.injected.empty());

  f.lessons.fail = absl::UnavailableError("bank down");  // the request goes without them
  Conversation failed;
  failed.User(json::array({Text("yet another task")}));
  EXPECT_EQ(f.Apply(failed, true, "s4")["messages"][0]["content"].size(), 1u);
}

TEST(ContextManagerLessons, StoredLessonsAreRepeatedWhenARequestTurnsThemOff) {
  Fixture f;
  Conversation c;
  c.User(json::array({Text("a task")}));
  const std::string block = f.Apply(c)["messages"][0]["content"][1].dump();
  c.ToolLoop("t1");
  // The conversation's prefix already holds them: removing them would change what was sent.
  EXPECT_EQ(f.Apply(c, /*allow=*/false)["messages"][0]["content"][1].dump(), block);
  c.Assistant(json::array({Text("done")}));
  c.User(json::array({Text("next task")}));
  json next = f.Apply(c, /*allow=*/false);
  EXPECT_EQ(next["messages"][4]["content"].size(), 1u);
  EXPECT_EQ(f.lessons.asked.size(), 1u);
}

TEST(ContextManagerLessons, ChatGetsThemAsAUserMessageAfterTheTurnBeforeASystemNudge) {
  Fixture f;
  json body = {{"model", "m"},
               {"tools", json::array({{{"type", "function"}, {"function", {{"name", "read"}}}}})},
               {"messages", json::array({Msg("system", "sys"), Msg("user", "fix the parser"),
                                         Msg("system", "a harness nudge")})}};
  auto request = OpenAIChatRequest::Parse(body.dump());
  ASSERT_TRUE(request.ok()) << request.status();
  std::shared_ptr<ModelRequest> chat = *std::move(request);
  auto applied = f.manager->Apply("local", "chat-1", chat, 1000, {}, "proj", true);
  ASSERT_TRUE(applied.ok()) << applied.status();
  json sent = json::parse(applied->body);
  ASSERT_EQ(sent["messages"].size(), 4u);
  EXPECT_EQ(sent["messages"][2]["role"], "user");
  EXPECT_THAT(sent["messages"][2].dump(), HasSubstr("[mem_a] lesson"));
  EXPECT_EQ(sent["messages"][3]["content"], "a harness nudge");
  ASSERT_EQ(f.lessons.asked.size(), 1u);
  EXPECT_EQ(f.lessons.asked[0].task, "fix the parser");
}

TEST(LessonRecordTest, RoundTripsAndRefusesMalformedRecords) {
  LessonRecord r{LessonBlock("a \"quoted\" lesson"), {"mem_1", "mem_2"}, 12};
  auto back = LessonRecord::Parse(r.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->block, r.block);
  EXPECT_EQ(back->ids, r.ids);
  EXPECT_EQ(back->tokens, 12);
  for (const char* bad : {"", "[]", R"({"block":"{}","ids":[1],"tokens":1})",
                          R"({"block":"not json","ids":[],"tokens":1})",
                          R"({"block":"[]","ids":[],"tokens":1})", R"({"ids":[],"tokens":1})"}) {
    EXPECT_FALSE(LessonRecord::Parse(bad).ok()) << bad;
  }
}

TEST(TaskTextTest, LeavesOutTheClientsRemindersAndBlankBlocks) {
  EXPECT_EQ(TaskText({"<system-reminder>x</system-reminder>\n  do it  ", "  ", "and this"}),
            "do it\nand this");
  EXPECT_EQ(TaskText({"a <system-reminder>x</system-reminder> b"}), "a  b");
  EXPECT_EQ(TaskText({"before <system-reminder>never closed"}), "before");
  EXPECT_EQ(TaskText({}), "");
  // Removing one span joins the pieces of another: that one goes too.
  EXPECT_EQ(TaskText({"<system-<system-reminder>x</system-reminder>reminder>y</system-reminder>z"}),
            "z");
}

}  // namespace
}  // namespace contextd::model
