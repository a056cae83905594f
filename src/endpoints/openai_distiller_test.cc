// OpenAiDistiller against FakeOpenAiServer over real HTTP on 127.0.0.1: the chat request (model,
// temperature 0, the success or failure prompt with the trace), candidates with the trace's
// outcome, a fenced reply, invalid candidates dropped and at most three kept, every kind of
// malformed answer (InvalidArgument), a closed port and a server that never answers.
#include "endpoints/openai_distiller.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "endpoints/openai_answers.h"
#include "endpoints/testing/fake_openai_server.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace contextd::endpoints {
namespace {

using testing::FakeOpenAiServer;
using namespace std::chrono_literals;

constexpr char kOneMemory[] =
    R"({"memories":[{"title":"Read the failing output first","description":"When a test fails after a change.","content":"Read the whole failure message before editing code; it usually names the broken assumption.","tags":["testing","debugging"]}]})";

uint16_t ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

memory::BranchTrace Trace(bool succeeded) {
  memory::BranchTrace t;
  t.tenant = "local";
  t.project = "p";
  t.session_id = "sess_7f3a";
  t.branch_id = "br_0192";
  t.description = "Fix the flaky retry test";
  t.prompt = "The retry test fails one run in ten; find out why and fix it.";
  t.summary = "The test used the wall clock; switched it to the fake clock.";
  t.succeeded = succeeded;
  t.finish_reason = succeeded ? "returned" : "budget exhausted";
  t.events = {{"tool_call", "fs__read_file", R"({"path":"retry_test.cc"})", false},
              {"tool_result", "fs__read_file", "TEST(Retry, Backoff) { sleep_for(...) }", false},
              {"tool_call", "shell__run", "ctest -R retry", false},
              {"tool_result", "shell__run", "1 test failed", true}};
  return t;
}

std::string Memory(const std::string& title, const std::string& content = "Do the thing.") {
  nlohmann::json m = {
      {"title", title}, {"description", "When it applies."}, {"content", content}, {"tags", {"a"}}};
  return m.dump();
}

class OpenAiDistillerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = FakeOpenAiServer::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    auto client = transport::HttpClient::Create({});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }
  OpenAiEndpointOptions Options() const {
    OpenAiEndpointOptions o;
    o.base_url = fake_->base_url() + "/v1";
    o.model = "test-chat";
    o.timeout_ms = 10'000;
    return o;
  }
  nlohmann::json LastRequest() {
    auto requests = fake_->requests();
    EXPECT_FALSE(requests.empty());
    if (requests.empty()) return nullptr;
    EXPECT_EQ(requests.back().path, "/v1/chat/completions");
    EXPECT_EQ(requests.back().authorization, "");  // no api_key_env
    return nlohmann::json::parse(requests.back().body);
  }

  std::unique_ptr<FakeOpenAiServer> fake_;
  std::unique_ptr<transport::HttpClient> client_;
};

TEST_F(OpenAiDistillerTest, ASucceededBranchYieldsSuccessCandidates) {
  OpenAiDistiller distiller(Options(), *client_);
  EXPECT_EQ(distiller.name(), "model test-chat");
  fake_->QueueChatContent(kOneMemory);
  auto candidates = distiller.Distill(Trace(true));
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_EQ(candidates->size(), 1u);
  const memory::Candidate& c = (*candidates)[0];
  EXPECT_EQ(c.title, "Read the failing output first");
  EXPECT_EQ(c.description, "When a test fails after a change.");
  EXPECT_EQ(c.outcome, memory::Outcome::kSuccess);
  EXPECT_EQ(c.tags, (std::vector<std::string>{"testing", "debugging"}));

  nlohmann::json request = LastRequest();
  EXPECT_EQ(request["model"], "test-chat");
  EXPECT_EQ(request["temperature"], 0);
  ASSERT_EQ(request["messages"].size(), 2u);
  EXPECT_EQ(request["messages"][0]["role"], "system");
  EXPECT_EQ(request["messages"][1]["role"], "user");
  const std::string user = request["messages"][1]["content"];
  EXPECT_NE(user.find("was completed"), std::string::npos);
  EXPECT_NE(user.find("at most 3 strategies"), std::string::npos);
  EXPECT_NE(user.find("Fix the flaky retry test"), std::string::npos);
  EXPECT_NE(user.find("fails one run in ten"), std::string::npos);
  EXPECT_NE(user.find("[4] tool_result shell__run (error): 1 test failed"), std::string::npos);
  EXPECT_NE(user.find("switched it to the fake clock"), std::string::npos);
  EXPECT_NE(user.find("{\"memories\":[{\"title\""), std::string::npos);
}

TEST_F(OpenAiDistillerTest, AForceReturnedBranchUsesTheReflectionPromptAndFailureOutcome) {
  OpenAiDistiller distiller(Options(), *client_);
  fake_->QueueChatContent(std::string("Here you go:\n```json\n") + kOneMemory + "\n```\n");
  auto candidates = distiller.Distill(Trace(false));
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_EQ(candidates->size(), 1u);
  EXPECT_EQ((*candidates)[0].outcome, memory::Outcome::kFailure);
  const std::string user = LastRequest()["messages"][1]["content"];
  EXPECT_NE(user.find("did not succeed"), std::string::npos);
  EXPECT_NE(user.find("Reflect on why"), std::string::npos);
  EXPECT_NE(user.find("budget exhausted"), std::string::npos);
  EXPECT_EQ(user.find("at most 3 strategies"), std::string::npos);
}

TEST_F(OpenAiDistillerTest, InvalidCandidatesAreDroppedAndAtMostThreeKept) {
  OpenAiDistiller distiller(Options(), *client_);
  std::string reply = "{\"memories\":[" + Memory("") + "," + Memory(std::string(201, 't')) + "," +
                      Memory("quotes the branch", "see br_0192") + "," + "42," + Memory("one") +
                      "," + Memory("two") + "," + Memory("three") + "," + Memory("four") + "]}";
  fake_->QueueChatContent(reply);
  auto candidates = distiller.Distill(Trace(true));
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  // The first three valid ones; the one quoting the branch id is dropped afterwards.
  std::vector<std::string> titles;
  for (const auto& c : *candidates) titles.push_back(c.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"one", "two"}));
}

TEST_F(OpenAiDistillerTest, EveryKindOfMalformedAnswerIsInvalidArgument) {
  OpenAiDistiller distiller(Options(), *client_);
  const std::vector<std::pair<std::string, std::string>> raw = {
      {"not JSON", "upstream proxy error"},
      {"no choices", R"({"error":{"message":"overloaded"}})"},
      {"empty choices", R"({"choices":[]})"},
      {"no message", R"({"choices":[{"index":0}]})"},
      {"null content", R"({"choices":[{"message":{"role":"assistant","content":null}}]})"},
      {"number content", R"({"choices":[{"message":{"content":7}}]})"},
  };
  for (const auto& [what, body] : raw) {
    fake_->QueueRaw(FakeOpenAiServer::kChatPath, {200, body});
    auto candidates = distiller.Distill(Trace(true));
    EXPECT_EQ(candidates.status().code(), absl::StatusCode::kInvalidArgument)
        << what << ": " << candidates.status();
  }
  const std::vector<std::pair<std::string, std::string>> contents = {
      {"prose", "I could not find anything worth remembering."},
      {"no memories key", R"({"items":[]})"},
      {"memories not a list", R"({"memories":{"title":"x"}})"},
      {"empty list", R"({"memories":[]})"},
      {"all invalid", "{\"memories\":[" + Memory(" ") + ",{\"title\":1}]}"},
      {"broken fence", "```json\n{\"memories\": [\n```"},
      {"all quote the session", "{\"memories\":[" + Memory("in sess_7f3a") + "]}"},
  };
  for (const auto& [what, content] : contents) {
    fake_->QueueChatContent(content);
    auto candidates = distiller.Distill(Trace(true));
    EXPECT_EQ(candidates.status().code(), absl::StatusCode::kInvalidArgument)
        << what << ": " << candidates.status();
  }
}

TEST_F(OpenAiDistillerTest, ALongTraceIsBoundedAndKeepsBothEnds) {
  memory::BranchTrace t = Trace(true);
  t.events.clear();
  for (int i = 0; i < 400; ++i) {
    t.events.push_back({"tool_result", "fs__read_file",
                        "step " + std::to_string(i) + " " + std::string(3000, 'x'), false});
  }
  t.prompt = std::string(20000, 'p');
  t.summary = std::string(20000, 's');
  OpenAiDistiller distiller(Options(), *client_);
  fake_->QueueChatContent(kOneMemory);
  ASSERT_TRUE(distiller.Distill(t).ok());
  const std::string user = LastRequest()["messages"][1]["content"];
  const size_t open = user.find("<record>\n"), close = user.find("</record>");
  ASSERT_NE(open, std::string::npos);
  ASSERT_NE(close, std::string::npos);
  const size_t trace_bytes = close - open - 9;
  EXPECT_LE(trace_bytes, kMaxTraceTextBytes);
  EXPECT_GT(trace_bytes, kMaxTraceTextBytes - 2048);  // the budget is used, not wasted
  EXPECT_NE(user.find("[1] tool_result fs__read_file: step 0 "), std::string::npos);
  EXPECT_NE(user.find("[400] tool_result fs__read_file: step 399 "), std::string::npos);
  EXPECT_NE(user.find(" steps left out ...]"), std::string::npos);
  EXPECT_NE(user.find("FINAL SUMMARY:\nsss"), std::string::npos);
}

TEST_F(OpenAiDistillerTest, AClosedPortIsUnavailableAtOnce) {
  OpenAiEndpointOptions o = Options();
  o.base_url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  o.timeout_ms = 30'000;
  OpenAiDistiller distiller(o, *client_);
  const auto start = std::chrono::steady_clock::now();
  auto candidates = distiller.Distill(Trace(true));
  EXPECT_EQ(candidates.status().code(), absl::StatusCode::kUnavailable) << candidates.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(OpenAiDistillerTest, AServerThatNeverAnswersIsDeadlineExceeded) {
  fake_->set_hold(true);
  OpenAiEndpointOptions o = Options();
  o.timeout_ms = 300;
  OpenAiDistiller distiller(o, *client_);
  auto candidates = distiller.Distill(Trace(true));
  EXPECT_EQ(candidates.status().code(), absl::StatusCode::kDeadlineExceeded) << candidates.status();
}

TEST_F(OpenAiDistillerTest, A500IsUnavailable) {
  OpenAiDistiller distiller(Options(), *client_);
  auto candidates = distiller.Distill(Trace(true));  // nothing scripted: the fake answers 500
  EXPECT_EQ(candidates.status().code(), absl::StatusCode::kUnavailable) << candidates.status();
}

// The pure parts, without HTTP.
TEST(OpenAiAnswersTest, RenderTraceCutsInsideTheBoundWithoutSplittingUtf8) {
  memory::BranchTrace t;
  t.description = "task";
  t.summary = std::string(5000, '\xc3') + "end";  // not valid UTF-8 either: still bounded
  for (int i = 0; i < 50; ++i) t.events.push_back({"tool_call", "x", std::string(900, 'e'), false});
  t.events.push_back({"tool_result", "y", "ééééé" + std::string(3000, 'z'), true});
  for (size_t max : {1024u, 4096u, 24u * 1024}) {
    std::string text = RenderTrace(t, max);
    EXPECT_LE(text.size(), max);
    EXPECT_NE(text.find("TASK: task"), std::string::npos);
  }
  memory::BranchTrace u;
  // The 1 KB cut of the description (1018 bytes and the mark) lands inside the "é".
  u.description = std::string(1017, 'a') + "é" + std::string(100, 'b');
  std::string text = RenderTrace(u, 24 * 1024);
  EXPECT_EQ(text.find("\xc3 [...]"), std::string::npos);
  EXPECT_NE(text.find("a [...]"), std::string::npos);
}

TEST(OpenAiAnswersTest, MemoriesParserToleratesFencesAndSurroundingProse) {
  for (const std::string& text :
       {std::string(kOneMemory), "```json\n" + std::string(kOneMemory) + "\n```",
        "```\n" + std::string(kOneMemory) + "```", "Sure! " + std::string(kOneMemory) + " Done.",
        "[" + Memory("bare list") + "]"}) {
    auto c = ParseMemoriesAnswer(text, memory::Outcome::kFailure);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status();
    ASSERT_EQ(c->size(), 1u);
    EXPECT_EQ((*c)[0].outcome, memory::Outcome::kFailure);
  }
  // Tags: non-strings, blanks, duplicates and over-long ones dropped; at most 16 kept.
  nlohmann::json m = nlohmann::json::parse(Memory("tags"));
  m["tags"] = {"a", " a ", "", 3, std::string(65, 'l'), "b"};
  for (int i = 0; i < 20; ++i) m["tags"].push_back("t" + std::to_string(i));
  auto c = ParseMemoriesAnswer("{\"memories\":[" + m.dump() + "]}", memory::Outcome::kSuccess);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ((*c)[0].tags.size(), memory::kMaxTags);
  EXPECT_EQ((*c)[0].tags[0], "a");
  EXPECT_EQ((*c)[0].tags[1], "b");
}

}  // namespace
}  // namespace contextd::endpoints
