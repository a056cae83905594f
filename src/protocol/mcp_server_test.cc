// Tests of the session and its dispatch: initialize and version negotiation, requests before
// initialize, unknown methods, logging/setLevel, batches, close and hooks, list_changed.
#include "protocol/mcp_server.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/executor.h"
#include "gtest/gtest.h"
#include "protocol/internal/mcp_server_test_fixture.h"
#include "protocol/jsonrpc.h"

namespace contextd::protocol {
namespace {

using internal::McpServerTest;
using internal::RecordingSink;
using internal::Sent;

TEST_F(McpServerTest, InitializeNegotiatesVersionAndDeclaresCapabilities) {
  EXPECT_EQ(session_->protocol_version(), "");
  Json r = Call(1, "initialize",
                {{"protocolVersion", "2025-06-18"},
                 {"capabilities", Json::object()},
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
  Json r =
      Call(1, "initialize", {{"protocolVersion", "1999-01-01"}, {"capabilities", Json::object()}});
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

TEST_F(McpServerTest, LoggingRespectsSetLevel) {
  ASSERT_TRUE(server_
                  .AddTool({"log", "", "", nullptr, nullptr, nullptr},
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

TEST_F(McpServerTest, BatchesOnlyIn2025_03_26) {
  Initialize("2025-06-18");
  Feed(
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}])");
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["error"]["code"], kInvalidRequest);
  EXPECT_EQ(sent[0].related, 1);

  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  Feed(
      R"([{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}])",
      s2.get());
  EXPECT_EQ(sink2->Take().at(0).message["error"]["code"], kInvalidRequest);  // never in a batch
  Feed(
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})",
      s2.get());
  EXPECT_EQ(sink2->Take().at(0).message["result"]["protocolVersion"], "2025-03-26");
  Feed(
      R"([{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/call",)"
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
                           },
                           nullptr});
  std::shared_ptr<ToolCall> held;
  bool cancelled = false;
  ASSERT_TRUE(server_
                  .AddTool({"hang", "", "", nullptr, nullptr, nullptr},
                           [&](std::shared_ptr<ToolCall> c) {
                             held = c;
                             c->OnCancelled([&] { cancelled = true; });
                           })
                  .ok());
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  EXPECT_EQ(server_.session_count(), 2u);
  Feed(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})",
      s2.get());
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
  server_.SetSessionHooks(
      {nullptr, [&](const SessionInfo& i, std::string_view) { closed.push_back(i.session_id); },
       nullptr});
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

// Another instance initialized the session (decision 0025): this one continues it as it was
// negotiated there, without initialize.
TEST_F(McpServerTest, AResumedSessionIsInitializedAsNegotiatedElsewhere) {
  std::vector<std::string> opened;
  SessionHooks hooks;
  hooks.on_open = [&](const SessionInfo& i) { opened.push_back(i.session_id + " " + i.project); };
  server_.SetSessionHooks(hooks);
  auto sink = std::make_shared<RecordingSink>();
  SessionInfo info;
  info.session_id = "s_resumed";
  info.project = "p_1";
  SessionResume resume;
  resume.protocol_version = "2025-03-26";
  resume.client_capabilities = {{"roots", Json::object()}};
  auto resumed = server_.ResumeSession(info, resume, sink);
  executor_.RunUntilIdle();
  EXPECT_EQ(resumed->protocol_version(), "2025-03-26");
  EXPECT_EQ(opened, (std::vector<std::string>{"s_resumed p_1"}));
  Feed(Serialize(MakeRequest(1, "tools/list", nullptr)), resumed.get());
  std::vector<Sent> sent = sink->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].message.contains("result")) << sent[0].message.dump();
  // Its version's rules hold: 2025-03-26 allows batches; initialize is refused.
  Feed(Serialize(MakeRequest(2, "initialize", {{"protocolVersion", "2025-03-26"}})), resumed.get());
  sent = sink->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["error"]["code"], kInvalidRequest);
}

TEST_F(McpServerTest, InitializeFailsWhenTheSessionCannotBeSaved) {
  std::vector<std::string> saved;
  SessionHooks hooks;
  bool fail = true;
  hooks.on_initialized = [&](const SessionInfo& i, const SessionResume& r) {
    if (fail) return absl::UnavailableError("database down");
    saved.push_back(i.session_id + " " + r.protocol_version + " " + r.client_capabilities.dump());
    return absl::OkStatus();
  };
  server_.SetSessionHooks(hooks);
  Json r =
      Call(1, "initialize",
           {{"protocolVersion", "2025-06-18"}, {"capabilities", {{"sampling", Json::object()}}}});
  EXPECT_EQ(r["error"]["code"], kInternalError) << r.dump();
  EXPECT_EQ(session_->protocol_version(), "");
  EXPECT_EQ(Call(2, "tools/list")["error"]["code"], kInvalidRequest);  // still uninitialized
  fail = false;
  r = Call(3, "initialize",
           {{"protocolVersion", "2025-06-18"}, {"capabilities", {{"sampling", Json::object()}}}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18") << r.dump();
  EXPECT_EQ(saved, (std::vector<std::string>{"s1 2025-06-18 {\"sampling\":{}}"}));
}

}  // namespace
}  // namespace contextd::protocol
