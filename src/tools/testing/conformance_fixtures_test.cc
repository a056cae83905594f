#include "tools/testing/conformance_fixtures.h"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/executor.h"
#include "gtest/gtest.h"
#include "protocol/testing/recording_sink.h"

namespace contextd::tools::testing {
namespace {

using protocol::Json;

using Sink = protocol::testing::RecordingSink;

class ConformanceFixturesTest : public ::testing::Test {
 protected:
  ConformanceFixturesTest() : executor_(clock_), server_(executor_, {"contextd", "0", ""}) {}

  void SetUp() override {
    ASSERT_TRUE(RegisterConformanceFixtures(server_).ok());
    protocol::SessionInfo info;
    info.session_id = "s";
    info.transport = "test";
    session_ = server_.CreateSession(info, sink_);
    Json init =
        Call("initialize",
             {{"protocolVersion", "2025-11-25"},
              {"capabilities", {{"sampling", Json::object()}, {"elicitation", Json::object()}}},
              {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    capabilities_ = init["result"]["capabilities"];
  }

  void Send(const Json& message) {
    auto in = protocol::ParseIncoming(protocol::Serialize(message));
    session_->Receive(std::get<protocol::Message>(in.items.at(0)));
    executor_.RunUntilIdle();
  }

  // Sends a request and returns the messages sent until its response (the response last).
  std::vector<Json> Exchange(std::string_view method, Json params) {
    const int id = next_id_++;
    Send(protocol::MakeRequest(id, method, std::move(params)));
    std::vector<Json> all;
    for (int i = 0; i < 100; ++i) {
      for (auto& m : sink_->Take()) all.push_back(std::move(m));
      if (!all.empty() && all.back().contains("id") && all.back()["id"] == id &&
          !all.back().contains("method")) {
        return all;
      }
      // Answer the server's own requests as a client would.
      if (!all.empty() && all.back().contains("method") && all.back().contains("id")) {
        const Json& req = all.back();
        Json result = req["method"] == "sampling/createMessage"
                          ? Json{{"role", "assistant"},
                                 {"content", {{"type", "text"}, {"text", "pong"}}},
                                 {"model", "m"}}
                          : Json{{"action", "accept"}, {"content", {{"username", "u"}}}};
        Send(protocol::MakeResult(req["id"], result));
        continue;
      }
      executor_.AdvanceAndRun(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no response to " << method;
    return all;
  }

  Json Call(std::string_view method, Json params) {
    return Exchange(method, std::move(params)).back();
  }

  Json Tool(std::string_view name, Json args = Json::object()) {
    return Call("tools/call", {{"name", name}, {"arguments", std::move(args)}})["result"];
  }

  base::FakeClock clock_;
  base::ManualExecutor executor_;
  protocol::McpServer server_;
  std::shared_ptr<Sink> sink_ = std::make_shared<Sink>();
  std::shared_ptr<protocol::Session> session_;
  Json capabilities_;
  int next_id_ = 1;
};

TEST_F(ConformanceFixturesTest, DeclaresEverything) {
  for (const char* cap : {"tools", "resources", "prompts", "logging", "completions"}) {
    EXPECT_TRUE(capabilities_.contains(cap)) << cap;
  }
  EXPECT_EQ(capabilities_["resources"]["subscribe"], true);
  std::set<std::string> names;
  Json listed = Call("tools/list", Json::object());
  ASSERT_TRUE(listed.contains("result")) << listed.dump();
  for (const auto& t : listed["result"]["tools"]) {
    names.insert(t["name"]);
    EXPECT_FALSE(t["description"].get<std::string>().empty());
    EXPECT_TRUE(t["inputSchema"].is_object());
  }
  for (const char* n :
       {"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
        "test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress",
        "test_error_handling", "test_sampling", "test_elicitation", "test_reconnection",
        "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
}

TEST_F(ConformanceFixturesTest, ContentTools) {
  EXPECT_EQ(Tool("test_simple_text")["content"][0]["text"],
            "This is a simple text response for testing.");
  EXPECT_EQ(Tool("test_image_content")["content"][0]["mimeType"], "image/png");
  EXPECT_EQ(Tool("test_audio_content")["content"][0]["mimeType"], "audio/wav");
  EXPECT_EQ(Tool("test_embedded_resource")["content"][0]["resource"]["uri"],
            "test://embedded-resource");
  EXPECT_EQ(Tool("test_multiple_content_types")["content"].size(), 3u);
  Json err = Tool("test_error_handling");
  EXPECT_EQ(err["isError"], true);
  EXPECT_FALSE(err["content"][0]["text"].get<std::string>().empty());
}

TEST_F(ConformanceFixturesTest, LoggingAndProgressArriveBeforeTheResult) {
  std::vector<Json> msgs = Exchange("tools/call", {{"name", "test_tool_with_logging"}});
  ASSERT_EQ(msgs.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(msgs[i]["method"], "notifications/message");
  EXPECT_EQ(msgs[1]["params"]["data"], "Tool processing data");

  msgs = Exchange("tools/call",
                  {{"name", "test_tool_with_progress"}, {"_meta", {{"progressToken", "pt"}}}});
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0]["params"]["progress"], 0);
  EXPECT_EQ(msgs[1]["params"]["progress"], 50);
  EXPECT_EQ(msgs[2]["params"]["progress"], 100);
  EXPECT_EQ(msgs[2]["params"]["progressToken"], "pt");
}

TEST_F(ConformanceFixturesTest, SamplingAndElicitation) {
  EXPECT_EQ(Tool("test_sampling", {{"prompt", "ping?"}})["content"][0]["text"],
            "LLM response: pong");
  std::vector<Json> msgs =
      Exchange("tools/call", {{"name", "test_elicitation"}, {"arguments", {{"message", "who?"}}}});
  ASSERT_GE(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["method"], "elicitation/create");
  EXPECT_EQ(msgs[0]["params"]["message"], "who?");
  EXPECT_NE(msgs.back()["result"]["content"][0]["text"].get<std::string>().find("action=accept"),
            std::string::npos);
  msgs = Exchange("tools/call", {{"name", "test_elicitation_sep1034_defaults"}});
  EXPECT_EQ(msgs[0]["params"]["requestedSchema"]["properties"]["score"]["default"], 95.5);
  msgs = Exchange("tools/call", {{"name", "test_elicitation_sep1330_enums"}});
  EXPECT_EQ(msgs[0]["params"]["requestedSchema"]["properties"]["legacyEnum"]["enumNames"].size(),
            3u);
  // Missing required argument: a tool error naming it.
  Json bad = Tool("test_sampling");
  EXPECT_EQ(bad["isError"], true);
  EXPECT_NE(bad["content"][0]["text"].get<std::string>().find("arguments.prompt"),
            std::string::npos);
}

TEST_F(ConformanceFixturesTest, SchemaKeywordsArePreserved) {
  const Json listed = Call("tools/list", Json::object());
  for (const auto& t : listed["result"]["tools"]) {
    if (t["name"] != "json_schema_2020_12_tool") continue;
    EXPECT_EQ(t["inputSchema"]["$schema"], "https://json-schema.org/draft/2020-12/schema");
    EXPECT_TRUE(t["inputSchema"]["$defs"].contains("address"));
    EXPECT_EQ(t["inputSchema"]["additionalProperties"], false);
    return;
  }
  FAIL() << "json_schema_2020_12_tool missing";
}

TEST_F(ConformanceFixturesTest, ResourcesPromptsCompletions) {
  EXPECT_EQ(
      Call("resources/read", {{"uri", "test://static-text"}})["result"]["contents"][0]["text"],
      "This is the content of the static text resource.");
  EXPECT_EQ(Call("resources/read",
                 {{"uri", "test://static-binary"}})["result"]["contents"][0]["mimeType"],
            "image/png");
  Json t = Call("resources/read", {{"uri", "test://template/123/data"}})["result"]["contents"][0];
  EXPECT_EQ(t["uri"], "test://template/123/data");
  EXPECT_NE(t["text"].get<std::string>().find("123"), std::string::npos);
  EXPECT_EQ(Call("resources/subscribe", {{"uri", kWatchedResourceUri}})["result"], Json::object());
  server_.NotifyResourceUpdated(kWatchedResourceUri);
  executor_.RunUntilIdle();
  EXPECT_EQ(sink_->Take().at(0)["params"]["uri"], kWatchedResourceUri);

  Json p = Call("prompts/get", {{"name", "test_prompt_with_arguments"},
                                {"arguments", {{"arg1", "A"}, {"arg2", "B"}}}});
  EXPECT_EQ(p["result"]["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='A', arg2='B'");
  p = Call("prompts/get", {{"name", "test_prompt_with_embedded_resource"},
                           {"arguments", {{"resourceUri", "test://x"}}}});
  EXPECT_EQ(p["result"]["messages"][0]["content"]["resource"]["uri"], "test://x");
  EXPECT_EQ(Call("prompts/get",
                 {{"name", "test_prompt_with_image"}})["result"]["messages"][0]["content"]["type"],
            "image");
  Json c = Call("completion/complete",
                {{"ref", {{"type", "ref/prompt"}, {"name", "test_prompt_with_arguments"}}},
                 {"argument", {{"name", "arg1"}, {"value", "par"}}}});
  EXPECT_EQ(c["result"]["completion"]["values"], Json({"paris", "park", "party"}));
}

TEST(ConformanceFixturesRegistration, TwiceIsAnError) {
  base::FakeClock clock;
  base::ManualExecutor executor(clock);
  protocol::McpServer server(executor, {"x", "0", ""});
  EXPECT_TRUE(RegisterConformanceFixtures(server).ok());
  EXPECT_EQ(RegisterConformanceFixtures(server).code(), absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace contextd::tools::testing
