#include "protocol/mcp_server.h"

#include <any>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/executor.h"
#include "gtest/gtest.h"

namespace contextd::protocol {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Sent {
  Json message;
  Json related;
};

class RecordingSink final : public MessageSink {
 public:
  void Send(Json message, const Json& related_request_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back({message, related_request_id});
  }
  // Recorded as a message {"closeStream": true} related to the request.
  void CloseStream(const Json& related_request_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back({Json{{"closeStream", true}}, related_request_id});
  }
  std::vector<Sent> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(sent_, {});
  }

 private:
  std::mutex mu_;
  std::vector<Sent> sent_;
};

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest() : executor_(clock_), server_(executor_, {"contextd-test", "1.2.3", "be kind"}, Options()) {}

  static ServerOptions Options() {
    ServerOptions o;
    o.page_size = 2;
    o.request_timeout = seconds(60);
    return o;
  }

  void SetUp() override {
    ASSERT_TRUE(server_
                    .AddTool({"echo", "Echo", "Echoes text",
                              Json::parse(R"({"type":"object","properties":{"text":{"type":"string",
                                "minLength":1}},"required":["text"]})"),
                              nullptr, nullptr},
                             [](std::shared_ptr<ToolCall> call) {
                               call->Finish(TextResult(call->arguments()["text"].get<std::string>()));
                             })
                    .ok());
    session_ = NewSession("s1");
  }

  std::shared_ptr<Session> NewSession(const std::string& id, std::shared_ptr<RecordingSink>* out = nullptr) {
    auto sink = std::make_shared<RecordingSink>();
    if (out != nullptr) {
      *out = sink;
    } else {
      sink_ = sink;
    }
    auto s = server_.CreateSession({id, "local", "test"}, sink);
    executor_.RunUntilIdle();
    return s;
  }

  // Hands a raw payload to the session as a transport would, without running the executor.
  void Receive(std::string_view raw, Session* s = nullptr) {
    Incoming in = ParseIncoming(raw);
    for (auto& item : in.items) {
      ASSERT_TRUE(std::holds_alternative<Message>(item)) << raw;
      (s ? s : session_.get())->Receive(std::move(std::get<Message>(item)));
    }
  }

  // Feeds a raw payload as a transport would, and runs the executor.
  void Feed(std::string_view raw, Session* s = nullptr) {
    Receive(raw, s);
    executor_.RunUntilIdle();
  }

  void Request(const Json& id, std::string_view method, Json params = nullptr) {
    Feed(Serialize(MakeRequest(id, method, std::move(params))));
  }

  // The response with `id` among what was sent since the last Take (fails if absent).
  Json ResponseTo(const Json& id, std::vector<Sent>* rest = nullptr) {
    std::vector<Sent> sent = sink_->Take();
    Json found;
    for (auto& s : sent) {
      if (s.message.contains("id") && s.message["id"] == id && !s.message.contains("method")) {
        EXPECT_EQ(s.related, id);
        found = s.message;
      } else if (rest != nullptr) {
        rest->push_back(s);
      }
    }
    EXPECT_FALSE(found.is_null()) << "no response to " << id.dump();
    return found;
  }

  Json Call(const Json& id, std::string_view method, Json params = nullptr) {
    Request(id, method, std::move(params));
    return ResponseTo(id);
  }

  void Initialize(std::string_view version = "2025-11-25", Json caps = Json::object()) {
    Json r = Call("init", "initialize",
                  {{"protocolVersion", version},
                   {"capabilities", caps},
                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    Feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    EXPECT_TRUE(sink_->Take().empty());
  }

  base::FakeClock clock_;
  base::ManualExecutor executor_;
  McpServer server_;
  std::shared_ptr<RecordingSink> sink_;
  std::shared_ptr<Session> session_;
};

TEST_F(McpServerTest, InitializeNegotiatesVersionAndDeclaresCapabilities) {
  EXPECT_EQ(session_->protocol_version(), "");
  Json r = Call(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", Json::object()},
                                  {"clientInfo", {{"name", "c"}, {"version", "0"}}}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "contextd-test");
  EXPECT_EQ(r["result"]["serverInfo"]["version"], "1.2.3");
  EXPECT_EQ(r["result"]["instructions"], "be kind");
  const Json& caps = r["result"]["capabilities"];
  EXPECT_EQ(caps["tools"]["listChanged"], true);
  EXPECT_TRUE(caps.contains("logging"));
  EXPECT_FALSE(caps.contains("resources"));  // nothing registered
  EXPECT_FALSE(caps.contains("prompts"));
  EXPECT_FALSE(caps.contains("completions"));
  EXPECT_EQ(session_->protocol_version(), "2025-06-18");
}

TEST_F(McpServerTest, UnsupportedVersionGetsLatest) {
  Json r = Call(1, "initialize", {{"protocolVersion", "1999-01-01"}, {"capabilities", Json::object()}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
  std::shared_ptr<RecordingSink> other_sink;
  auto other = NewSession("s2", &other_sink);
  EXPECT_EQ(other->protocol_version(), "");
  Feed(Serialize(MakeRequest(1, "initialize", {{"protocolVersion", "2025-03-26"}})), other.get());
  EXPECT_EQ(other->protocol_version(), "2025-03-26");
  EXPECT_EQ(other_sink->Take().at(0).message["result"]["protocolVersion"], "2025-03-26");
}

TEST_F(McpServerTest, InitializeNeedsAVersion) {
  Json r = Call(1, "initialize", {{"capabilities", Json::object()}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  r = Call(2, "initialize");
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, RequestsBeforeInitializeAreRejectedExceptPing) {
  Json r = Call(1, "tools/list");
  EXPECT_EQ(r["error"]["code"], kInvalidRequest);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("before initialize"), std::string::npos);
  r = Call(2, "ping");
  EXPECT_EQ(r["result"], Json::object());
}

TEST_F(McpServerTest, SecondInitializeIsAnError) {
  Initialize();
  Json r = Call(9, "initialize", {{"protocolVersion", "2025-11-25"}});
  EXPECT_EQ(r["error"]["code"], kInvalidRequest);
  EXPECT_EQ(session_->protocol_version(), "2025-11-25");
}

TEST_F(McpServerTest, UnknownMethodAndNotification) {
  Initialize();
  Json r = Call("x", "tools/explode");
  EXPECT_EQ(r["error"]["code"], kMethodNotFound);
  Feed(R"({"jsonrpc":"2.0","method":"notifications/whatever"})");
  EXPECT_TRUE(sink_->Take().empty());
  // Responses nobody asked for are ignored.
  Feed(R"({"jsonrpc":"2.0","id":12345,"result":{}})");
  Feed(R"({"jsonrpc":"2.0","id":"zz","error":{"code":1,"message":"m"}})");
  EXPECT_TRUE(sink_->Take().empty());
}

TEST_F(McpServerTest, ToolsListPaginates) {
  for (const char* name : {"b", "c", "d", "e"}) {
    ASSERT_TRUE(server_.AddTool({name, "", std::string("tool ") + name, nullptr, nullptr, nullptr},
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
  EXPECT_EQ(server_.AddTool({"s", "", "", Json::parse(R"({"type":"string"})"), nullptr, nullptr}, h).code(),
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
                          call->Finish(
                              TextResult(std::any_cast<std::string>(call->prepared())));
                        },
                        [&prepared_texts, tag](const Json& args) -> std::any {
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
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("required"), std::string::npos);

  EXPECT_EQ(Call(4, "tools/call", {{"name", "nope"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(5, "tools/call", {{"name", "echo"}, {"arguments", 3}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(6, "tools/call", {{"arguments", Json::object()}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(7, "tools/call")["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, ThrowingHandlerBecomesToolError) {
  ASSERT_TRUE(server_.AddTool({"boom", "", "", nullptr, nullptr, nullptr},
                              [](std::shared_ptr<ToolCall> c) {
                                (void)c->arguments().at("missing");  // throws out_of_range
                              })
                  .ok());
  Initialize();
  Json r = Call(1, "tools/call", {{"name", "boom"}});
  EXPECT_EQ(r["result"]["isError"], true);
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
  ASSERT_TRUE(server_.AddTool({"p", "", "", nullptr, nullptr, nullptr},
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
  ASSERT_TRUE(server_.AddTool({"wait", "", "", nullptr, nullptr, nullptr},
                              [&](std::shared_ptr<ToolCall> c) {
                                held = c;
                                c->OnCancelled([&] { ++cancelled_callbacks; });
                              })
                  .ok());
  Initialize();
  Request("w1", "tools/call", {{"name", "wait"}});
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->cancelled());
  Feed(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"user"}})");
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
  ASSERT_TRUE(server_.AddTool({"later", "", "", nullptr, nullptr, nullptr},
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
  ASSERT_TRUE(server_.AddTool({"bg", "", "", nullptr, nullptr, nullptr},
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
  ASSERT_TRUE(server_.AddTool({"hang", "", "", nullptr, nullptr, nullptr}, [](std::shared_ptr<ToolCall>) {}).ok());
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
  Feed(Serialize(MakeRequest(1, "initialize", {{"protocolVersion", "2025-11-25"},
                                               {"capabilities", {{"sampling", Json::object()}}}})),
       s2.get());
  sink2->Take();
  Feed(Serialize(MakeRequest(2, "tools/call", {{"name", "sample"}})), s2.get());
  Json req = sink2->Take().at(0).message;
  Feed(Serialize(MakeError(req["id"], -1, "user rejected")), s2.get());
  std::vector<Sent> sent = sink2->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_NE(sent[0].message["result"]["content"][0]["text"].get<std::string>().find("user rejected"),
            std::string::npos);
}

TEST_F(McpServerTest, CancellingACallFailsItsClientRequests) {
  bool got_cancelled = false;
  ASSERT_TRUE(server_
                  .AddTool({"ask", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) {
                             c->SendRequest("elicitation/create", {{"message", "?"}}, milliseconds(0),
                                            [&](absl::StatusOr<Json> r) {
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

TEST_F(McpServerTest, LoggingRespectsSetLevel) {
  ASSERT_TRUE(server_.AddTool({"log", "", "", nullptr, nullptr, nullptr},
                              [](std::shared_ptr<ToolCall> c) {
                                c->Log(LoggingLevel::kInfo, "t", "info line");
                                c->Log(LoggingLevel::kError, "", {{"k", 1}});
                                c->Finish(TextResult("ok"));
                              })
                  .ok());
  Initialize();
  std::vector<Sent> rest;
  Request(1, "tools/call", {{"name", "log"}});
  ResponseTo(1, &rest);
  ASSERT_EQ(rest.size(), 2u);  // no filter before setLevel
  EXPECT_EQ(rest[0].message["params"]["level"], "info");
  EXPECT_EQ(rest[0].message["params"]["logger"], "t");
  EXPECT_EQ(rest[0].related, 1);

  EXPECT_EQ(Call(2, "logging/setLevel", {{"level", "warning"}})["result"], Json::object());
  rest.clear();
  Request(3, "tools/call", {{"name", "log"}});
  ResponseTo(3, &rest);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].message["params"]["level"], "error");
  EXPECT_FALSE(rest[0].message["params"].contains("logger"));
  EXPECT_EQ(Call(4, "logging/setLevel", {{"level", "loud"}})["error"]["code"], kInvalidParams);
}

class ResourceTest : public McpServerTest {
 protected:
  void SetUp() override {
    McpServerTest::SetUp();
    ASSERT_TRUE(server_
                    .AddResource({"test://a", "a", "A", "first", "text/plain"},
                                 [](const ResourceRead& r, ResourceDone done) {
                                   done(Json::array({{{"uri", r.uri}, {"text", "hello"}}}));
                                 })
                    .ok());
    ASSERT_TRUE(server_
                    .AddResource({"test://gone", "gone", "", "", ""},
                                 [](const ResourceRead&, ResourceDone done) {
                                   done(absl::NotFoundError("deleted"));
                                 })
                    .ok());
    ASSERT_TRUE(server_
                    .AddResourceTemplate({"test://item/{id}/data", "item", "", "items", "application/json"},
                                         [](const ResourceRead& r, ResourceDone done) {
                                           done(Json::array({{{"uri", r.uri}, {"text", r.variables.at("id")}}}));
                                         })
                    .ok());
    Initialize();
  }
};

TEST_F(ResourceTest, ListReadAndTemplates) {
  Json r = Call(1, "resources/list");
  ASSERT_EQ(r["result"]["resources"].size(), 2u);
  EXPECT_EQ(r["result"]["resources"][0]["uri"], "test://a");
  EXPECT_EQ(r["result"]["resources"][0]["mimeType"], "text/plain");
  r = Call(2, "resources/templates/list");
  EXPECT_EQ(r["result"]["resourceTemplates"][0]["uriTemplate"], "test://item/{id}/data");
  r = Call(3, "resources/read", {{"uri", "test://a"}});
  EXPECT_EQ(r["result"]["contents"][0]["text"], "hello");
  r = Call(4, "resources/read", {{"uri", "test://item/123/data"}});
  EXPECT_EQ(r["result"]["contents"][0]["text"], "123");
  r = Call(5, "resources/read", {{"uri", "test://item/1/2/data"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  r = Call(6, "resources/read", {{"uri", "test://nothing"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  EXPECT_EQ(r["error"]["data"]["uri"], "test://nothing");
  r = Call(7, "resources/read", {{"uri", "test://gone"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(8, "resources/read")["error"]["code"], kInvalidParams);
}

TEST_F(ResourceTest, SubscriptionsDriveUpdatedNotifications) {
  EXPECT_EQ(Call(1, "resources/subscribe", {{"uri", "test://a"}})["result"], Json::object());
  server_.NotifyResourceUpdated("test://a");
  server_.NotifyResourceUpdated("test://other");
  executor_.RunUntilIdle();
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["method"], "notifications/resources/updated");
  EXPECT_EQ(sent[0].message["params"]["uri"], "test://a");
  EXPECT_TRUE(sent[0].related.is_null());
  EXPECT_EQ(Call(2, "resources/unsubscribe", {{"uri", "test://a"}})["result"], Json::object());
  server_.NotifyResourceUpdated("test://a");
  executor_.RunUntilIdle();
  EXPECT_TRUE(sink_->Take().empty());
}

TEST_F(ResourceTest, CapabilitiesIncludeResources) {
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  Feed(Serialize(MakeRequest(1, "initialize", {{"protocolVersion", "2025-11-25"}})), s2.get());
  Json r = sink2->Take().at(0).message;
  EXPECT_EQ(r["result"]["capabilities"]["resources"]["subscribe"], true);
}

TEST_F(McpServerTest, PromptsAndCompletion) {
  ASSERT_TRUE(server_
                  .AddPrompt({"greet", "Greet", "says hello", {{"who", "name", true}, {"tone", "", false}}},
                             [](const std::map<std::string, std::string>& args, const SessionInfo&)
                                 -> absl::StatusOr<Json> {
                               if (args.at("who") == "bad") return absl::InvalidArgumentError("bad who");
                               return Json{{"messages",
                                            {{{"role", "user"},
                                              {"content", {{"type", "text"}, {"text", "hi " + args.at("who")}}}}}}};
                             })
                  .ok());
  ASSERT_TRUE(server_
                  .AddCompletion("ref/prompt", "greet", "who",
                                 [](std::string_view v, const std::map<std::string, std::string>&) {
                                   std::vector<std::string> out;
                                   for (std::string s : {"alice", "albert", "bob"}) {
                                     if (s.rfind(v, 0) == 0) out.push_back(s);
                                   }
                                   return out;
                                 })
                  .ok());
  Initialize();
  Json r = Call(1, "prompts/list");
  EXPECT_EQ(r["result"]["prompts"][0]["name"], "greet");
  EXPECT_EQ(r["result"]["prompts"][0]["arguments"][0]["required"], true);
  r = Call(2, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "ann"}}}});
  EXPECT_EQ(r["result"]["messages"][0]["content"]["text"], "hi ann");
  EXPECT_EQ(Call(3, "prompts/get", {{"name", "greet"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(4, "prompts/get", {{"name", "nope"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(5, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", 1}}}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(Call(6, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "bad"}}}})["error"]["code"],
            kInvalidParams);

  r = Call(7, "completion/complete",
           {{"ref", {{"type", "ref/prompt"}, {"name", "greet"}}}, {"argument", {{"name", "who"}, {"value", "al"}}}});
  EXPECT_EQ(r["result"]["completion"]["values"], Json({"alice", "albert"}));
  EXPECT_EQ(r["result"]["completion"]["total"], 2);
  EXPECT_EQ(r["result"]["completion"]["hasMore"], false);
  r = Call(8, "completion/complete",
           {{"ref", {{"type", "ref/prompt"}, {"name", "other"}}}, {"argument", {{"name", "x"}, {"value", ""}}}});
  EXPECT_EQ(r["result"]["completion"]["values"], Json::array());
  EXPECT_EQ(Call(9, "completion/complete", {{"ref", 1}})["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, AsyncPromptAnswersWhenDoneRunsLaterFromAnotherThread) {
  PromptDone pending;
  ASSERT_TRUE(server_
                  .AddAsyncPrompt({"later", "", "answers later", {{"x", "", true}}},
                                  [&pending](const std::map<std::string, std::string>& args,
                                             const SessionInfo& session, PromptDone done) {
                                    EXPECT_EQ(args.at("x"), "1");
                                    EXPECT_EQ(session.session_id, "s1");
                                    pending = std::move(done);
                                  })
                  .ok());
  ASSERT_TRUE(server_
                  .AddAsyncPrompt({"fails", "", "", {}},
                                  [](const std::map<std::string, std::string>&, const SessionInfo&,
                                     PromptDone done) {
                                    done(absl::UnavailableError("upstream u unavailable: down"));
                                    done(Json::object());  // ignored: once only
                                  })
                  .ok());
  Initialize();
  Request(1, "prompts/get", {{"name", "later"}, {"arguments", {{"x", "1"}}}});
  EXPECT_TRUE(sink_->Take().empty()) << "no reply before done";
  ASSERT_TRUE(pending);
  std::thread([&] {
    pending(Json{{"messages", Json::array({{{"role", "user"},
                                             {"content", {{"type", "text"}, {"text", "ok"}}}}})}});
  }).join();
  executor_.RunUntilIdle();
  Json r = ResponseTo(1);
  EXPECT_EQ(r["result"]["messages"][0]["content"]["text"], "ok");
  r = Call(2, "prompts/get", {{"name", "fails"}});
  EXPECT_EQ(r["error"]["code"], kInternalError);
  EXPECT_EQ(r["error"]["message"], "upstream u unavailable: down");
  EXPECT_TRUE(sink_->Take().empty()) << "the second done must not reply again";
  // Required arguments are checked before the handler runs.
  EXPECT_EQ(Call(3, "prompts/get", {{"name", "later"}})["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, RemovesPromptsResourcesAndTemplates) {
  auto noop_reader = [](const ResourceRead&, ResourceDone done) { done(Json::array()); };
  ASSERT_TRUE(server_.AddResource({"test://a", "a", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_.AddResource({"test://b", "b", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_.AddResourceTemplate({"test://t/{id}", "t", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_
                  .AddPrompt({"p", "", "", {}},
                             [](const std::map<std::string, std::string>&,
                                const SessionInfo&) -> absl::StatusOr<Json> {
                               return Json{{"messages", Json::array()}};
                             })
                  .ok());
  Initialize();
  EXPECT_TRUE(server_.RemoveResource("test://a").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemoveResource("test://a")));
  EXPECT_TRUE(server_.RemoveResourceTemplate("test://t/{id}").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemoveResourceTemplate("test://t/{id}")));
  EXPECT_TRUE(server_.RemovePrompt("p").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemovePrompt("p")));
  Json r = Call(1, "resources/list");
  ASSERT_EQ(r["result"]["resources"].size(), 1u);
  EXPECT_EQ(r["result"]["resources"][0]["uri"], "test://b");
  EXPECT_EQ(Call(2, "resources/templates/list")["result"]["resourceTemplates"], Json::array());
  EXPECT_EQ(Call(3, "prompts/list")["result"]["prompts"], Json::array());
  EXPECT_EQ(Call(4, "resources/read", {{"uri", "test://a"}})["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(5, "resources/read", {{"uri", "test://t/1"}})["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(6, "prompts/get", {{"name", "p"}})["error"]["code"], kInvalidParams);
  // The name can be registered again.
  EXPECT_TRUE(server_.AddResource({"test://a", "a", "", "", ""}, noop_reader).ok());
}

TEST_F(McpServerTest, BatchesOnlyIn2025_03_26) {
  Initialize("2025-06-18");
  Feed(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}])");
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["error"]["code"], kInvalidRequest);
  EXPECT_EQ(sent[0].related, 1);

  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  Feed(R"([{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}])", s2.get());
  EXPECT_EQ(sink2->Take().at(0).message["error"]["code"], kInvalidRequest);  // never in a batch
  Feed(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})", s2.get());
  EXPECT_EQ(sink2->Take().at(0).message["result"]["protocolVersion"], "2025-03-26");
  Feed(R"([{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/call",)"
       R"("params":{"name":"echo","arguments":{"text":"x"}}}])",
       s2.get());
  sent = sink2->Take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].related, "a");
  EXPECT_EQ(sent[0].message["result"], Json::object());
  EXPECT_EQ(sent[1].related, "b");
  EXPECT_EQ(sent[1].message["result"]["content"][0]["text"], "x");
}

TEST_F(McpServerTest, CloseCancelsWorkRunsHooksAndDropsLaterMessages) {
  std::vector<std::string> events;
  server_.SetSessionHooks({[&](const SessionInfo& i) { events.push_back("open " + i.session_id); },
                           [&](const SessionInfo& i, std::string_view why) {
                             events.push_back("close " + i.session_id + " " + std::string(why));
                           }});
  std::shared_ptr<ToolCall> held;
  bool cancelled = false;
  ASSERT_TRUE(server_.AddTool({"hang", "", "", nullptr, nullptr, nullptr},
                              [&](std::shared_ptr<ToolCall> c) {
                                held = c;
                                c->OnCancelled([&] { cancelled = true; });
                              })
                  .ok());
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  EXPECT_EQ(server_.session_count(), 2u);
  Feed(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})", s2.get());
  Feed(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang"}})", s2.get());
  sink2->Take();
  s2->Close("eof");
  s2->Close("again");
  executor_.RunUntilIdle();
  EXPECT_TRUE(cancelled);
  EXPECT_TRUE(held->cancelled());
  EXPECT_EQ(events, (std::vector<std::string>{"open s2", "close s2 eof"}));
  EXPECT_EQ(server_.session_count(), 1u);
  Feed(R"({"jsonrpc":"2.0","id":3,"method":"ping"})", s2.get());
  held->Finish(TextResult("late"));
  executor_.RunUntilIdle();
  EXPECT_TRUE(sink2->Take().empty());
}

TEST_F(McpServerTest, DroppedSessionIsUnregistered) {
  std::vector<std::string> closed;
  server_.SetSessionHooks({nullptr, [&](const SessionInfo& i, std::string_view) { closed.push_back(i.session_id); }});
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  EXPECT_EQ(server_.session_count(), 2u);
  s2.reset();
  executor_.RunUntilIdle();
  EXPECT_EQ(server_.session_count(), 1u);
  EXPECT_EQ(closed, std::vector<std::string>{"s2"});
}

TEST_F(McpServerTest, ListChangedGoesToInitializedSessionsWithNullRelatedId) {
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);  // not initialized: gets nothing
  Initialize();
  server_.NotifyToolsListChanged();
  server_.NotifyPromptsListChanged();
  server_.NotifyResourcesListChanged();
  executor_.RunUntilIdle();
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].message["method"], "notifications/tools/list_changed");
  EXPECT_EQ(sent[1].message["method"], "notifications/prompts/list_changed");
  EXPECT_EQ(sent[2].message["method"], "notifications/resources/list_changed");
  EXPECT_TRUE(sent[0].related.is_null());
  EXPECT_TRUE(sink2->Take().empty());
}

}  // namespace
}  // namespace contextd::protocol
