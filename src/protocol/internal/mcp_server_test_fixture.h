// McpServerTest: the gtest fixture the protocol room's McpServer tests share (mcp_server_test.cc,
// tool_call_test.cc, resources_prompts_test.cc): a server on a ManualExecutor with a FakeClock and
// an "echo" tool, one session, and helpers that feed raw JSON-RPC and read the answers. Its
// RecordingSink, unlike testing/recording_sink.h, keeps each message's related request id.
// Tests only; private to the protocol room. Thread-safety: RecordingSink is thread-safe; the
// fixture is used from the test's thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "gtest/gtest.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "protocol/session.h"

namespace contextd::protocol::internal {

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
  McpServerTest()
      : executor_(clock_), server_(executor_, {"contextd-test", "1.2.3", "be kind"}, Options()) {}

  static ServerOptions Options() {
    ServerOptions o;
    o.page_size = 2;
    o.request_timeout = std::chrono::seconds(60);
    return o;
  }

  void SetUp() override {
    ASSERT_TRUE(server_
                    .AddTool({"echo", "Echo", "Echoes text",
                              Json::parse(R"({"type":"object","properties":{"text":{"type":"string",
                                "minLength":1}},"required":["text"]})"),
                              nullptr, nullptr},
                             [](std::shared_ptr<ToolCall> call) {
                               call->Finish(
                                   TextResult(call->arguments()["text"].get<std::string>()));
                             })
                    .ok());
    session_ = NewSession("s1");
  }

  std::shared_ptr<Session> NewSession(const std::string& id,
                                      std::shared_ptr<RecordingSink>* out = nullptr) {
    auto sink = std::make_shared<RecordingSink>();
    if (out != nullptr) {
      *out = sink;
    } else {
      sink_ = sink;
    }
    auto s = server_.CreateSession({id, "local", "test", "", "", ""}, sink);
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

}  // namespace contextd::protocol::internal
