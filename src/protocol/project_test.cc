// A session's project (McpServer::SetProjectResolver): roots/list asked after initialized, the
// first scoped request held until the answer or ServerOptions::roots_wait, the project fixed once.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "protocol/internal/mcp_server_test_fixture.h"

namespace contextd::protocol::internal {
namespace {

class ProjectTest : public McpServerTest {
 protected:
  void SetUp() override {
    McpServerTest::SetUp();
    server_.SetProjectResolver([this](const Json& roots, SessionInfo& info) {
      resolved_with_.push_back(roots);
      info.project = roots.is_array() && !roots.empty() ? roots[0]["uri"].get<std::string>()
                                                        : std::string("fallback");
    });
    ASSERT_TRUE(server_
                    .AddTool({"whoami", "Who am I", "The session's project",
                              Json::parse(R"({"type":"object"})"), nullptr, nullptr},
                             [](std::shared_ptr<ToolCall> call) {
                               call->Finish(TextResult(call->session().project));
                             })
                    .ok());
    session_ = NewSession("s2");  // created after the resolver was set
  }

  // initialize (with `caps`) and notifications/initialized; returns what was sent after the
  // initialize answer.
  std::vector<Sent> Start(Json caps) {
    Json r = Call("init", "initialize",
                  {{"protocolVersion", "2025-11-25"},
                   {"capabilities", caps},
                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    EXPECT_TRUE(r.contains("result")) << r.dump();
    Feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    return sink_->Take();
  }

  static std::vector<Sent> RootsRequests(const std::vector<Sent>& sent) {
    std::vector<Sent> out;
    for (const Sent& s : sent) {
      if (s.message.value("method", "") == "roots/list") out.push_back(s);
    }
    return out;
  }

  void Answer(const Json& id, Json result) {
    Feed(Serialize(Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}));
  }

  static Json Roots(const std::string& uri) {
    return Json{{"roots", Json::array({Json{{"uri", uri}, {"name", "wt"}}})}};
  }

  std::vector<Json> resolved_with_;
};

TEST_F(ProjectTest, FirstToolCallWaitsForRootsOnItsOwnStream) {
  auto eager = RootsRequests(Start({{"roots", {{"listChanged", true}}}}));
  ASSERT_EQ(eager.size(), 1u);
  EXPECT_TRUE(eager[0].related.is_null());  // the standalone stream

  Request(1, "tools/call", {{"name", "whoami"}, {"arguments", Json::object()}});
  auto sent = sink_->Take();
  auto asked = RootsRequests(sent);
  ASSERT_EQ(asked.size(), 1u) << "held, and roots asked again on the call's stream";
  EXPECT_EQ(asked[0].related, 1);
  EXPECT_EQ(sent.size(), 1u) << "no answer before the roots";

  Answer(asked[0].message["id"], Roots("file:///work/a"));
  Json r = ResponseTo(1);
  EXPECT_EQ(r["result"]["content"][0]["text"], "file:///work/a");
  ASSERT_EQ(resolved_with_.size(), 1u);

  // Fixed: later roots change nothing and are not asked for.
  Answer(eager[0].message["id"], Roots("file:///work/b"));
  Feed(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
  EXPECT_TRUE(RootsRequests(sink_->Take()).empty());
  EXPECT_EQ(Call(2, "tools/call", {{"name", "whoami"}})["result"]["content"][0]["text"],
            "file:///work/a");
  EXPECT_EQ(resolved_with_.size(), 1u);
}

TEST_F(ProjectTest, AnAnswerBeforeTheFirstCallIsUsedAtOnce) {
  auto eager = RootsRequests(Start({{"roots", Json::object()}}));
  ASSERT_EQ(eager.size(), 1u);
  Answer(eager[0].message["id"], Roots("file:///work/early"));
  EXPECT_EQ(Call(1, "tools/call", {{"name", "whoami"}})["result"]["content"][0]["text"],
            "file:///work/early");
}

TEST_F(ProjectTest, ListChangedBeforeTheFirstCallAsksAgain) {
  auto eager = RootsRequests(Start({{"roots", {{"listChanged", true}}}}));
  ASSERT_EQ(eager.size(), 1u);
  Feed(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
  auto again = RootsRequests(sink_->Take());
  ASSERT_EQ(again.size(), 1u);
  Answer(again[0].message["id"], Roots("file:///work/moved"));
  EXPECT_EQ(Call(1, "tools/call", {{"name", "whoami"}})["result"]["content"][0]["text"],
            "file:///work/moved");
}

TEST_F(ProjectTest, ASilentClientIsWaitedForAtMostRootsWait) {
  Start({{"roots", Json::object()}});
  Request(1, "tools/call", {{"name", "whoami"}});
  sink_->Take();
  clock_.Advance(ServerOptions().roots_wait - std::chrono::milliseconds(1));
  executor_.RunUntilIdle();
  EXPECT_TRUE(resolved_with_.empty());
  clock_.Advance(std::chrono::milliseconds(1));
  executor_.RunUntilIdle();
  EXPECT_EQ(ResponseTo(1)["result"]["content"][0]["text"], "fallback");
  ASSERT_EQ(resolved_with_.size(), 1u);
  EXPECT_TRUE(resolved_with_[0].is_null());
}

TEST_F(ProjectTest, WithoutTheRootsCapabilityNothingIsAskedOrHeld) {
  EXPECT_TRUE(RootsRequests(Start(Json::object())).empty());
  EXPECT_EQ(Call(1, "tools/call", {{"name", "whoami"}})["result"]["content"][0]["text"],
            "fallback");
  // tools/list and ping are never held.
  EXPECT_TRUE(Call(2, "tools/list").contains("result"));
}

TEST_F(ProjectTest, AnErrorAnswerFixesTheProjectWithoutRoots) {
  Start({{"roots", Json::object()}});
  Request(1, "tools/call", {{"name", "whoami"}});
  auto asked = RootsRequests(sink_->Take());
  ASSERT_EQ(asked.size(), 1u);
  Feed(Serialize(Json{{"jsonrpc", "2.0"},
                      {"id", asked[0].message["id"]},
                      {"error", {{"code", -32601}, {"message", "no roots"}}}}));
  EXPECT_EQ(ResponseTo(1)["result"]["content"][0]["text"], "fallback");
}

TEST_F(ProjectTest, AHeldCallThatIsCancelledIsNeverAnswered) {
  Start({{"roots", Json::object()}});
  Request(1, "tools/call", {{"name", "whoami"}});
  auto asked = RootsRequests(sink_->Take());
  ASSERT_EQ(asked.size(), 1u);
  Feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
  Answer(asked[0].message["id"], Roots("file:///work/a"));
  for (const Sent& s : sink_->Take()) {
    EXPECT_FALSE(s.message.contains("id") && s.message["id"] == 1) << s.message.dump();
  }
}

}  // namespace
}  // namespace contextd::protocol::internal
