// Tests of tools: tools/list paging, registration, argument validation and ToolPrepare, results
// and handler errors, and the ToolCall (progress, logging order, cancellation, Finish,
// server-to-client requests such as sampling with their timeouts).
#include "protocol/tool_call.h"

#include <any>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "gtest/gtest.h"
#include "protocol/internal/mcp_server_test_fixture.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "protocol/tool_notices.h"

namespace contextd::protocol {
namespace {

using internal::McpServerTest;
using internal::RecordingSink;
using internal::Sent;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ToolNoticesTest, ANoticeGoesToTheTextAndToTheStructuredResultsArray) {
  ToolResult text_only = TextResult("body");
  AppendNotice(text_only, "budget 80% used", kNoticesMember);
  EXPECT_EQ(text_only.content, (Json::array({{{"type", "text"}, {"text", "body"}},
                                             {{"type", "text"}, {"text", "budget 80% used"}}})));
  EXPECT_TRUE(text_only.structured_content.is_null()) << "no structured result is made up";

  ToolResult structured = TextResult("body");
  structured.structured_content = {{"k", 1}};
  AppendNotice(structured, "first", kNoticesMember);
  AppendNotice(structured, "second", kNoticesMember);
  EXPECT_EQ(structured.structured_content["warnings"], Json::array({"first", "second"}));
  EXPECT_EQ(structured.content.size(), 3u);

  // A member of the tool's own that is not an array is left alone; the text still carries it.
  ToolResult own = TextResult("body");
  own.structured_content = {{"contextd_warnings", "the tool's"}};
  AppendNotice(own, "notice", kProxiedNoticesMember);
  EXPECT_EQ(own.structured_content["contextd_warnings"], "the tool's");
  EXPECT_EQ(own.content.back()["text"], "notice");
}

TEST(ToolNoticesTest, AnOutputSchemaLearnsTheNoticesMember) {
  Json strict = {{"type", "object"},
                 {"properties", {{"text", {{"type", "string"}}}}},
                 {"additionalProperties", false}};
  AllowProxiedNotices(strict);
  EXPECT_EQ(strict["properties"]["contextd_warnings"]["type"], "array");
  EXPECT_EQ(strict["properties"]["text"]["type"], "string");
  // Strict without properties of its own: they are created.
  Json bare = {{"type", "object"}, {"additionalProperties", false}};
  AllowProxiedNotices(bare);
  EXPECT_EQ(bare["properties"]["contextd_warnings"]["items"]["type"], "string");
  // Not an object, or properties that are not an object: unchanged.
  Json boolean_schema = true;
  AllowProxiedNotices(boolean_schema);
  EXPECT_EQ(boolean_schema, true);
  Json odd = {{"properties", 3}};
  AllowProxiedNotices(odd);
  EXPECT_EQ(odd, (Json{{"properties", 3}}));
}

TEST_F(McpServerTest, ToolsListPaginates) {
  for (const char* name : {"b", "c", "d", "e"}) {
    ASSERT_TRUE(server_
                    .AddTool({name, "", std::string("tool ") + name, nullptr, nullptr, nullptr},
                             [](std::shared_ptr<ToolCall> c) { c->Finish(TextResult("")); })
                    .ok());
  }
  Initialize();
  std::vector<std::string> names;
  Json cursor = nullptr;
  int pages = 0;
  do {
    Json params = Json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    Json r = Call(100 + pages, "tools/list", params);
    ASSERT_TRUE(r.contains("result")) << r.dump();
    for (const auto& t : r["result"]["tools"]) {
      names.push_back(t["name"]);
      EXPECT_EQ(t["inputSchema"]["type"], "object");
    }
    cursor = r["result"].value("nextCursor", Json());
    ++pages;
  } while (!cursor.is_null() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"echo", "b", "c", "d", "e"}));
  EXPECT_EQ(Call(1, "tools/list", {{"cursor", "garbage"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(2, "tools/list", {{"cursor", 5}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(3, "tools/list", {{"cursor", "p999"}})["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, AddToolRejectsBadDefinitions) {
  auto h = [](std::shared_ptr<ToolCall> c) { c->Finish(TextResult("")); };
  EXPECT_EQ(server_.AddTool({"echo", "", "", nullptr, nullptr, nullptr}, h).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(server_.AddTool({"bad name", "", "", nullptr, nullptr, nullptr}, h).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server_.AddTool({"s", "", "", Json::parse(R"({"type":"string"})"), nullptr, nullptr}, h)
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(server_.RemoveTool("echo").ok());
  EXPECT_EQ(server_.RemoveTool("echo").code(), absl::StatusCode::kNotFound);
}

// Arguments are checked when the message arrives (on the transport's thread); a tool replaced
// before the call runs is checked again, against the schema of the tool that runs.
TEST_F(McpServerTest, ToolsCallUsesTheSchemaOfTheToolThatRuns) {
  Initialize();
  auto replace_echo = [&](const char* schema) {
    ASSERT_TRUE(server_.RemoveTool("echo").ok());
    ASSERT_TRUE(server_
                    .AddTool({"echo", "", "", Json::parse(schema), nullptr, nullptr},
                             [](std::shared_ptr<ToolCall> call) {
                               call->Finish(TextResult(call->arguments().dump()));
                             })
                    .ok());
  };
  auto receive = [&](const Json& request) { Receive(Serialize(request)); };
  // Valid when received, invalid for the tool that runs.
  receive(MakeRequest(1, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  replace_echo(R"({"type":"object","properties":{"text":{"type":"integer"}}})");
  executor_.RunUntilIdle();
  Json r = ResponseTo(1);
  EXPECT_EQ(r["result"]["isError"], true) << r.dump();
  // Invalid when received (a string is required), valid for the tool that runs.
  replace_echo(R"({"type":"object","properties":{"text":{"type":"string"}}})");
  receive(MakeRequest(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", 7}}}}));
  replace_echo(R"({"type":"object"})");
  receive(MakeRequest(3, "tools/call", {{"name", "echo"}, {"arguments", {{"text", 7}}}}));
  executor_.RunUntilIdle();
  std::vector<Sent> rest;
  r = ResponseTo(2, &rest);
  EXPECT_FALSE(r["result"].contains("isError")) << r.dump();
  EXPECT_EQ(r["result"]["content"][0]["text"], R"({"text":7})");
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_FALSE(rest[0].message["result"].contains("isError")) << rest[0].message.dump();
}

// A tool's ToolPrepare runs when the request is received (here: before the executor runs), on
// valid arguments only, and its result reaches the handler; a tool replaced in between is
// prepared again by the replacement; what it throws becomes an error result.
TEST_F(McpServerTest, ToolPrepareRunsOnReceiptAndReachesTheHandler) {
  Initialize();
  std::vector<std::string> prepared_texts;
  auto add_upper = [&](const char* tag) {
    (void)server_.RemoveTool("upper");
    ASSERT_TRUE(server_
                    .AddTool(
                        {"upper", "", "",
                         Json::parse(R"({"type":"object","properties":{"text":{"type":"string"}},)"
                                     R"("required":["text"]})"),
                         nullptr, nullptr},
                        [](std::shared_ptr<ToolCall> call) {
                          call->Finish(TextResult(std::any_cast<std::string>(call->prepared())));
                        },
                        [&prepared_texts, tag](const Json& args, const SessionInfo&) -> std::any {
                          std::string text = args["text"].get<std::string>();
                          if (text == "throw") throw std::runtime_error("cannot prepare this");
                          prepared_texts.push_back(text);
                          return std::string(tag) + ":" + text;
                        })
                    .ok());
  };
  auto receive = [&](const Json& request) { Receive(Serialize(request)); };
  add_upper("first");
  receive(MakeRequest(1, "tools/call", {{"name", "upper"}, {"arguments", {{"text", "a"}}}}));
  receive(MakeRequest(2, "tools/call", {{"name", "upper"}, {"arguments", {{"text", 5}}}}));
  receive(MakeRequest(3, "tools/call", {{"name", "upper"}, {"arguments", {{"text", "throw"}}}}));
  EXPECT_EQ(prepared_texts, std::vector<std::string>{"a"});  // before the executor ran
  executor_.RunUntilIdle();
  std::vector<Sent> rest;
  EXPECT_EQ(ResponseTo(1, &rest)["result"]["content"][0]["text"], "first:a");
  auto response_in_rest = [&rest](int id) {
    for (const Sent& sent : rest) {
      if (sent.message.contains("id") && sent.message["id"] == id) return sent.message;
    }
    return Json();
  };
  Json invalid = response_in_rest(2);
  EXPECT_EQ(invalid["result"]["isError"], true) << invalid.dump();
  Json threw = response_in_rest(3);
  EXPECT_EQ(threw["result"]["isError"], true) << threw.dump();
  EXPECT_NE(threw["result"]["content"][0]["text"].get<std::string>().find("cannot prepare this"),
            std::string::npos)
      << threw.dump();
  EXPECT_EQ(prepared_texts.size(), 1u);  // not for invalid arguments
  // Received for the first tool, run by its replacement: prepared again, by the replacement.
  receive(MakeRequest(4, "tools/call", {{"name", "upper"}, {"arguments", {{"text", "b"}}}}));
  add_upper("second");
  executor_.RunUntilIdle();
  EXPECT_EQ(ResponseTo(4)["result"]["content"][0]["text"], "second:b");
  EXPECT_EQ(prepared_texts, (std::vector<std::string>{"a", "b", "b"}));
}

TEST_F(McpServerTest, ToolsCallValidatesAndAnswers) {
  Initialize();
  Json r = Call(1, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}});
  EXPECT_EQ(r["result"]["content"][0]["text"], "hi");
  EXPECT_FALSE(r["result"].contains("isError"));

  r = Call(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", ""}}}});
  EXPECT_EQ(r["result"]["isError"], true);
  const std::string text = r["result"]["content"][0]["text"];
  EXPECT_NE(text.find("arguments.text"), std::string::npos) << text;
  EXPECT_NE(text.find("minLength"), std::string::npos) << text;

  r = Call(3, "tools/call", {{"name", "echo"}});
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("required"),
            std::string::npos);

  EXPECT_EQ(Call(4, "tools/call", {{"name", "nope"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(5, "tools/call", {{"name", "echo"}, {"arguments", 3}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(Call(6, "tools/call", {{"arguments", Json::object()}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(Call(7, "tools/call")["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, ToolCallClosesItsStreamBeforeItsResult) {
  ASSERT_TRUE(server_
                  .AddTool({"poll", "", "", nullptr, nullptr, nullptr},
                           [](std::shared_ptr<ToolCall> c) {
                             c->SendProgress(1, 2);
                             c->CloseStream();
                             c->executor().PostAfter(milliseconds(100),
                                                     [c] { c->Finish(TextResult("later")); });
                           })
                  .ok());
  Initialize();
  Request(9, "tools/call", {{"name", "poll"}, {"_meta", {{"progressToken", "p"}}}});
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].message["method"], "notifications/progress");
  EXPECT_EQ(sent[1].message, (Json{{"closeStream", true}}));
  EXPECT_EQ(sent[1].related, 9);
  executor_.AdvanceAndRun(milliseconds(100));
  EXPECT_EQ(ResponseTo(9)["result"]["content"][0]["text"], "later");
}

TEST_F(McpServerTest, ThrowingHandlerBecomesToolError) {
  ASSERT_TRUE(server_
                  .AddTool({"boom", "", "", nullptr, nullptr, nullptr},
                           [](std::shared_ptr<ToolCall> c) {
                             (void)c->arguments().at("missing");  // throws out_of_range
                           })
                  .ok());
  Initialize();
  Json r = Call(1, "tools/call", {{"name", "boom"}});
  EXPECT_EQ(r["result"]["isError"], true);
}

TEST_F(McpServerTest, ProgressNotificationsCarryTheTokenAndRequestId) {
  ASSERT_TRUE(server_
                  .AddTool({"slow", "", "", nullptr, nullptr, nullptr},
                           [](std::shared_ptr<ToolCall> c) {
                             EXPECT_TRUE(c->has_progress_token());
                             c->SendProgress(0, 100, "start");
                             c->executor().PostAfter(milliseconds(50), [c] {
                               c->SendProgress(50, 100);
                               c->executor().PostAfter(milliseconds(50), [c] {
                                 c->SendProgress(100, 100);
                                 c->Finish(TextResult("done"));
                               });
                             });
                           })
                  .ok());
  Initialize();
  Request(7, "tools/call", {{"name", "slow"}, {"_meta", {{"progressToken", "tok"}}}});
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["method"], "notifications/progress");
  EXPECT_EQ(sent[0].message["params"]["progressToken"], "tok");
  EXPECT_EQ(sent[0].message["params"]["message"], "start");
  EXPECT_EQ(sent[0].related, 7);
  executor_.AdvanceAndRun(milliseconds(50));
  sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["params"]["progress"], 50);
  executor_.AdvanceAndRun(milliseconds(50));
  std::vector<Sent> rest;
  Json r = ResponseTo(7, &rest);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].message["params"]["progress"], 100);
  EXPECT_EQ(r["result"]["content"][0]["text"], "done");
}

TEST_F(McpServerTest, NoProgressWithoutToken) {
  ASSERT_TRUE(server_
                  .AddTool({"p", "", "", nullptr, nullptr, nullptr},
                           [](std::shared_ptr<ToolCall> c) {
                             EXPECT_FALSE(c->has_progress_token());
                             c->SendProgress(1, 2);
                             c->Finish(TextResult("ok"));
                           })
                  .ok());
  Initialize();
  Request(1, "tools/call", {{"name", "p"}});
  std::vector<Sent> rest;
  ResponseTo(1, &rest);
  EXPECT_TRUE(rest.empty());
}

TEST_F(McpServerTest, CancellationStopsWorkAndSuppressesTheResponse) {
  std::shared_ptr<ToolCall> held;
  int cancelled_callbacks = 0;
  ASSERT_TRUE(server_
                  .AddTool({"wait", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) {
                             held = c;
                             c->OnCancelled([&] { ++cancelled_callbacks; });
                           })
                  .ok());
  Initialize();
  Request("w1", "tools/call", {{"name", "wait"}});
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->cancelled());
  Feed(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"user"}})");
  EXPECT_TRUE(held->cancelled());
  EXPECT_EQ(cancelled_callbacks, 1);
  held->Finish(TextResult("too late"));
  executor_.RunUntilIdle();
  EXPECT_TRUE(sink_->Take().empty());
  // A cancellation for an unknown or finished request is ignored.
  Feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1"}})");
  Feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})");
  EXPECT_TRUE(sink_->Take().empty());
  // OnCancelled after the fact runs at once.
  held->OnCancelled([&] { ++cancelled_callbacks; });
  executor_.RunUntilIdle();
  EXPECT_EQ(cancelled_callbacks, 2);
}

TEST_F(McpServerTest, FinishTwiceSendsOneResponseAndWorksFromAnotherThread) {
  std::shared_ptr<ToolCall> held;
  ASSERT_TRUE(server_
                  .AddTool({"later", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) { held = c; })
                  .ok());
  Initialize();
  Request(1, "tools/call", {{"name", "later"}});
  EXPECT_TRUE(sink_->Take().empty());
  std::thread t([&] {
    held->Finish(TextResult("first"));
    held->Finish(TextResult("second"));
  });
  t.join();
  executor_.RunUntilIdle();
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["result"]["content"][0]["text"], "first");
}

TEST_F(McpServerTest, OffExecutorProgressAndLogsPrecedeTheResponseAndNothingFollowsIt) {
  std::shared_ptr<ToolCall> held;
  ASSERT_TRUE(server_
                  .AddTool({"bg", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) { held = c; })
                  .ok());
  Initialize();
  Request(4, "tools/call", {{"name", "bg"}, {"_meta", {{"progressToken", 1}}}});
  std::thread t([&] {
    held->SendProgress(1, 1);
    held->Log(LoggingLevel::kInfo, "", "done soon");
    held->Finish(TextResult("ok"));
    held->SendProgress(2, 2);  // after Finish: dropped
    held->Log(LoggingLevel::kInfo, "", "too late");
  });
  t.join();
  executor_.RunUntilIdle();
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].message["method"], "notifications/progress");
  EXPECT_EQ(sent[1].message["method"], "notifications/message");
  EXPECT_EQ(sent[2].message["result"]["content"][0]["text"], "ok");
}

TEST_F(McpServerTest, DuplicateInFlightIdIsRejected) {
  ASSERT_TRUE(
      server_.AddTool({"hang", "", "", nullptr, nullptr, nullptr}, [](std::shared_ptr<ToolCall>) {})
          .ok());
  Initialize();
  Request(5, "tools/call", {{"name", "hang"}});
  Json r = Call(5, "tools/call", {{"name", "hang"}});
  EXPECT_EQ(r["error"]["code"], kInvalidRequest);
}

// A tool that asks the client for a sampling and reports what happened.
void AddSamplingTool(McpServer& server, std::chrono::milliseconds timeout) {
  ASSERT_TRUE(server
                  .AddTool({"sample", "", "", nullptr, nullptr, nullptr},
                           [timeout](std::shared_ptr<ToolCall> c) {
                             Json params = {{"messages", Json::array()}, {"maxTokens", 10}};
                             c->SendRequest("sampling/createMessage", params, timeout,
                                            [c](absl::StatusOr<Json> r) {
                                              if (!r.ok()) {
                                                c->Finish(ErrorResult(r.status().ToString()));
                                                return;
                                              }
                                              c->Finish(TextResult((*r)["content"]["text"]));
                                            });
                           })
                  .ok());
}

TEST_F(McpServerTest, SamplingRoundTrip) {
  AddSamplingTool(server_, milliseconds(0));
  Initialize("2025-11-25", {{"sampling", Json::object()}});
  Request(3, "tools/call", {{"name", "sample"}});
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  const Json& req = sent[0].message;
  EXPECT_EQ(req["method"], "sampling/createMessage");
  EXPECT_EQ(sent[0].related, 3);
  ASSERT_TRUE(req["id"].is_number_integer());
  Feed(Serialize(MakeResult(req["id"], {{"role", "assistant"},
                                        {"content", {{"type", "text"}, {"text", "sampled!"}}},
                                        {"model", "m"}})));
  Json r = ResponseTo(3);
  EXPECT_EQ(r["result"]["content"][0]["text"], "sampled!");
  // The timer was cancelled: nothing fires later.
  executor_.AdvanceAndRun(seconds(120));
  EXPECT_TRUE(sink_->Take().empty());
}

TEST_F(McpServerTest, SamplingTimeoutUsesTheDefault) {
  AddSamplingTool(server_, milliseconds(0));
  Initialize("2025-11-25", {{"sampling", Json::object()}});
  Request(3, "tools/call", {{"name", "sample"}});
  Json req = sink_->Take().at(0).message;
  executor_.AdvanceAndRun(seconds(59));
  EXPECT_TRUE(sink_->Take().empty());
  executor_.AdvanceAndRun(seconds(1));
  std::vector<Sent> rest;
  Json r = ResponseTo(3, &rest);
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("DEADLINE_EXCEEDED"),
            std::string::npos);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].message["method"], "notifications/cancelled");
  EXPECT_EQ(rest[0].message["params"]["requestId"], req["id"]);
  // The late answer is ignored.
  Feed(Serialize(MakeResult(req["id"], Json::object())));
  EXPECT_TRUE(sink_->Take().empty());
}

TEST_F(McpServerTest, SamplingErrorAndMissingCapability) {
  AddSamplingTool(server_, milliseconds(1000));
  Initialize();  // no sampling capability
  Json r = Call(1, "tools/call", {{"name", "sample"}});
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("FAILED_PRECONDITION"),
            std::string::npos);

  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  Feed(Serialize(MakeRequest(
           1, "initialize",
           {{"protocolVersion", "2025-11-25"}, {"capabilities", {{"sampling", Json::object()}}}})),
       s2.get());
  sink2->Take();
  Feed(Serialize(MakeRequest(2, "tools/call", {{"name", "sample"}})), s2.get());
  Json req = sink2->Take().at(0).message;
  Feed(Serialize(MakeError(req["id"], -1, "user rejected")), s2.get());
  std::vector<Sent> sent = sink2->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_NE(
      sent[0].message["result"]["content"][0]["text"].get<std::string>().find("user rejected"),
      std::string::npos);
}

TEST_F(McpServerTest, CancellingACallFailsItsClientRequests) {
  bool got_cancelled = false;
  ASSERT_TRUE(server_
                  .AddTool({"ask", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) {
                             c->SendRequest("elicitation/create", {{"message", "?"}},
                                            milliseconds(0), [&](absl::StatusOr<Json> r) {
                                              got_cancelled = absl::IsCancelled(r.status());
                                            });
                           })
                  .ok());
  Initialize("2025-11-25", {{"elicitation", Json::object()}});
  Request(1, "tools/call", {{"name", "ask"}});
  Json req = sink_->Take().at(0).message;
  EXPECT_EQ(req["method"], "elicitation/create");
  Feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
  EXPECT_TRUE(got_cancelled);
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);  // we tell the client to stop the elicitation
  EXPECT_EQ(sent[0].message["method"], "notifications/cancelled");
  EXPECT_EQ(sent[0].message["params"]["requestId"], req["id"]);
}

}  // namespace
}  // namespace contextd::protocol
