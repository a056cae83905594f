// Gateway tests against a real child process (gateway_test_upstream) through a real McpServer
// session, with a real BranchManager over an in-memory store.
#include "gateway/gateway.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "base/executor.h"
#ifdef CONTEXTD_GATEWAY_HTTP_TEST
#include "transport/http_server.h"
#endif
#include "folding/engine_branch_ledger.h"
#include "folding/testing/fakes.h"
#include "gtest/gtest.h"

namespace contextd::gateway {
namespace {

using protocol::Json;
using namespace std::chrono_literals;

std::string TestUpstreamPath() { return GATEWAY_TEST_UPSTREAM; }

// Collects a session's outbound messages.
class Inbox final : public protocol::MessageSink {
 public:
  void Send(Json message, const Json&) override {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(message);
    cv_.notify_all();
  }
  // Waits (bounded) for the first message not yet taken that matches `pred`; null on timeout.
  Json Take(const std::function<bool(const Json&)>& pred, std::chrono::milliseconds wait = 15s) {
    std::unique_lock<std::mutex> lock(mu_);
    Json found;
    cv_.wait_for(lock, wait, [&] {
      for (auto it = messages_.begin(); it != messages_.end(); ++it) {
        if (pred(*it)) {
          found = *it;
          messages_.erase(it);
          return true;
        }
      }
      return false;
    });
    return found;
  }
  Json Response(int id) {
    return Take(
        [id](const Json& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); });
  }
  Json Notification(std::string_view method, std::chrono::milliseconds wait = 15s) {
    return Take(
        [method](const Json& m) { return !m.contains("id") && m.value("method", "") == method; },
        wait);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Json> messages_;
};

struct Recorded {
  std::string branch_id, tool, args, result;
  int64_t args_tokens, result_tokens;
  bool is_error;
};

class RecordingObserver final : public InterceptionObserver {
 public:
  void OnProxiedCall(const protocol::SessionInfo&, std::string_view branch_id,
                     std::string_view tool, std::string_view scrubbed_args,
                     std::string_view scrubbed_result, int64_t args_tokens, int64_t result_tokens,
                     bool is_error) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(Recorded{std::string(branch_id), std::string(tool), std::string(scrubbed_args),
                             std::string(scrubbed_result), args_tokens, result_tokens, is_error});
  }
  std::mutex mu;
  std::vector<Recorded> calls;
};

folding::SessionKey KeyFor(const protocol::SessionInfo& info) {
  return folding::SessionKey{info.tenant, "default", info.session_id};
}

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_shared<protocol::McpServer>(executor_, protocol::ServerInfo{"t", "1", ""});
    executor_.RunSync([&] {
      manager_ = std::make_unique<folding::BranchManager>(folding::FoldingConfig{}, executor_,
                                                          store_, counter_, scrubber_, nullptr);
      ASSERT_TRUE(manager_->Recover().ok());
    });
    ledger_ = std::make_unique<folding::EngineBranchLedger>(executor_, *manager_, store_, nullptr,
                                                            counter_);
    inbox_ = std::make_shared<Inbox>();
    session_ = server_->CreateSession(info_, inbox_);
    Send(Json{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", {{"sampling", Json::object()}}},
                {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}});
    ASSERT_FALSE(inbox_->Response(1).is_null());
    Send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }

  void StartGateway(std::chrono::milliseconds timeout = 10s) {
    UpstreamConfig config;
    config.name = "t";
    config.stdio = StdioUpstream{TestUpstreamPath(), {}, {}, ""};
    config.call_timeout = timeout;
    StartGateway(config);
  }

  void StartGateway(const UpstreamConfig& config) {
    GatewayDeps deps{
        server_.get(), ledger_.get(), &counter_, &scrubber_,
        KeyFor,        &observer_,    nullptr,   UpstreamClient::Backoff{20ms, 1000ms}};
    auto gateway = Gateway::Create(std::move(deps), {config});
    ASSERT_TRUE(gateway.ok()) << gateway.status();
    gateway_ = std::move(gateway).value();
    executor_.RunSync([&] { gateway_->Start(); });
    ASSERT_FALSE(inbox_->Notification("notifications/tools/list_changed").is_null());
  }

  void TearDown() override {
    session_->Close("test end");
    executor_.RunSync([&] {
      if (gateway_) gateway_->Stop();
      gateway_.reset();
      ledger_.reset();
      manager_.reset();
    });
    executor_.Stop();
  }

  void Send(const Json& message) {
    auto parsed = protocol::ParseMessage(message);
    session_->Receive(std::get<protocol::Message>(std::move(parsed)));
  }

  // tools/call and its response's result.
  Json Call(const std::string& tool, Json args, Json meta = nullptr) {
    int id = next_id_++;
    Json params = {{"name", tool}, {"arguments", std::move(args)}};
    if (!meta.is_null()) params["_meta"] = meta;
    Send(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}});
    Json response = inbox_->Response(id);
    return response.is_null() ? Json() : response.value("result", Json());
  }

  // The entry called `name` in a tools/list or prompts/list result's array, or null.
  static Json Named(const Json& list, std::string_view name) {
    for (const auto& entry : list) {
      if (entry["name"] == name) return entry;
    }
    return nullptr;
  }

  static std::string Text(const Json& result) {
    std::string out;
    for (const auto& block : result.value("content", Json::array())) out += block.value("text", "");
    return out;
  }

  std::string CreateBranch(int64_t budget) {
    std::string id;
    executor_.RunSync([&] {
      folding::CreateRequest request;
      request.description = "read files";
      request.prompt = "go";
      request.budget = budget;
      auto created = manager_->Create(KeyFor(info_), request);
      ASSERT_TRUE(created.ok()) << created.status();
      id = created->branch_id;
    });
    return id;
  }

  base::ThreadExecutor executor_;
  folding::testing::InMemoryBranchStore store_;
  folding::testing::WordTokenCounter counter_;
  folding::testing::FakeScrubber scrubber_;
  std::unique_ptr<folding::BranchManager> manager_;
  std::unique_ptr<folding::EngineBranchLedger> ledger_;
  std::shared_ptr<protocol::McpServer> server_;
  protocol::SessionInfo info_ = [] {
    protocol::SessionInfo info;
    info.session_id = "s1";
    info.transport = "stdio";
    return info;
  }();
  std::shared_ptr<Inbox> inbox_;
  std::shared_ptr<protocol::Session> session_;
  RecordingObserver observer_;
  std::unique_ptr<Gateway> gateway_;
  int next_id_ = 10;
};

TEST_F(GatewayTest, ListsPrefixedToolsAndScrubsResultsBeforeTheObserverAndTheAgent) {
  StartGateway();
  Send(Json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  Json tools = inbox_->Response(2)["result"]["tools"];
  bool found = false;
  for (const auto& t : tools) {
    if (t["name"] == "t__echo") {
      found = true;
      EXPECT_EQ(t["description"], "test tool echo");
      EXPECT_EQ(t["inputSchema"]["required"], Json::array({"text"}));
    }
  }
  EXPECT_TRUE(found) << tools.dump();

  Json result = Call("t__echo", {{"text", "key SECRET123 here"}});
  EXPECT_EQ(Text(result), "key [REDACTED:test-secret:SE...] here");
  EXPECT_FALSE(result.value("isError", false));
  std::lock_guard<std::mutex> lock(observer_.mu);
  ASSERT_EQ(observer_.calls.size(), 1u);
  const Recorded& r = observer_.calls[0];
  EXPECT_EQ(r.tool, "t__echo");
  EXPECT_EQ(r.branch_id, "");
  EXPECT_EQ(r.result, "key [REDACTED:test-secret:SE...] here");
  EXPECT_EQ(r.result_tokens, 3);
  EXPECT_NE(r.args.find("[REDACTED:test-secret:SE...]"), std::string::npos);
  EXPECT_EQ(r.args.find("SECRET123"), std::string::npos);
  EXPECT_FALSE(r.is_error);
}

TEST_F(GatewayTest, EngineValidatesArgumentsAgainstTheUpstreamSchema) {
  StartGateway();
  Json result = Call("t__echo", Json::object());
  EXPECT_TRUE(result.value("isError", false));
  EXPECT_NE(Text(result).find("text"), std::string::npos);
}

TEST_F(GatewayTest, ChargesTheActiveBranchAndAnswersExhaustedInsteadOfContent) {
  StartGateway();
  std::string branch = CreateBranch(100);
  Json result = Call("t__big", {{"words", 500}});
  EXPECT_TRUE(result.value("isError", false));
  EXPECT_NE(Text(result).find("budget exhausted"), std::string::npos) << Text(result);
  EXPECT_LT(Text(result).size(), 500u * 5) << "the result itself must not be delivered";
  std::lock_guard<std::mutex> lock(observer_.mu);
  ASSERT_EQ(observer_.calls.size(), 1u);
  EXPECT_EQ(observer_.calls[0].branch_id, branch);
  EXPECT_EQ(observer_.calls[0].result_tokens, 500);
  EXPECT_TRUE(observer_.calls[0].is_error);
}

TEST_F(GatewayTest, AppendsTheWarningWhenTheBranchCrosses80Percent) {
  StartGateway();
  CreateBranch(200);
  Json result = Call("t__big", {{"words", 170}});
  EXPECT_FALSE(result.value("isError", false));
  ASSERT_EQ(result["content"].size(), 2u) << result.dump();
  EXPECT_NE(result["content"][1]["text"].get<std::string>().find("% used: 172/200 tokens"),
            std::string::npos);
  Json log = inbox_->Notification("notifications/message");
  EXPECT_EQ(log["params"]["level"], "warning");
}

TEST_F(GatewayTest, AWarningReachesTheStructuredResultTooAndItsSchemaAcceptsIt) {
  StartGateway();
  Send(Json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  Json schema = Named(inbox_->Response(2)["result"]["tools"], "t__big_structured")["outputSchema"];
  EXPECT_EQ(schema["additionalProperties"], false);
  EXPECT_EQ(schema["properties"]["contextd_warnings"]["type"], "array") << schema.dump();

  CreateBranch(200);
  // 85 words of text counted twice (text block and structured result) cross 80% of 200.
  Json result = Call("t__big_structured", {{"words", 85}});
  EXPECT_FALSE(result.value("isError", false)) << result.dump();
  ASSERT_EQ(result["content"].size(), 2u) << result.dump();
  const std::string warning = result["content"][1]["text"];
  EXPECT_NE(warning.find("% used: "), std::string::npos) << warning;
  // A client that shows the model the structured result (Claude Code does) shows the warning too.
  EXPECT_EQ(result["structuredContent"]["contextd_warnings"], Json::array({warning}));
  EXPECT_EQ(result["structuredContent"]["text"].get<std::string>().size(), 85u * 5);
}

TEST_F(GatewayTest, CrashedUpstreamAnswersUnavailableThenRestartsWithToolsStillListed) {
  StartGateway();
  pid_t first = -1;
  executor_.RunSync([&] { first = gateway_->upstream("t")->pid(); });
  Json crashed = Call("t__crash", Json::object());
  EXPECT_TRUE(crashed.value("isError", false));
  EXPECT_NE(Text(crashed).find("upstream t unavailable"), std::string::npos) << Text(crashed);
  // Restarted: its tools are listed again (list_changed) and calls work.
  ASSERT_FALSE(inbox_->Notification("notifications/tools/list_changed").is_null());
  Json echoed = Call("t__echo", {{"text", "again"}});
  EXPECT_EQ(Text(echoed), "again");
  executor_.RunSync([&] {
    EXPECT_EQ(gateway_->upstream("t")->starts(), 2);
    EXPECT_NE(gateway_->upstream("t")->pid(), first);
  });
}

TEST_F(GatewayTest, SlowUpstreamTimesOutWithinTheConfiguredTimeout) {
  StartGateway(300ms);
  auto start = std::chrono::steady_clock::now();
  Json result = Call("t__slow", {{"ms", 5000}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(result.value("isError", false));
  EXPECT_NE(Text(result).find("upstream t unavailable: no answer to tools/call within 300 ms"),
            std::string::npos)
      << Text(result);
}

TEST_F(GatewayTest, ForwardsTheClientsCancellationUpstream) {
  StartGateway();
  int id = next_id_++;
  Send(Json{{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", "t__slow"}, {"arguments", {{"ms", 10000}}}}}});
  Send(Json{{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", id}, {"reason", "user"}}}});
  EXPECT_EQ(Text(Call("t__stats", Json::object())), "cancellations=1");
}

TEST_F(GatewayTest, RelaysProgressWithTheClientsToken) {
  StartGateway();
  Json result = Call("t__progress", {{"steps", 3}}, {{"progressToken", "tok"}});
  EXPECT_EQ(Text(result), "done 3");
  for (int i = 1; i <= 3; ++i) {
    Json p = inbox_->Notification("notifications/progress", 1s);
    ASSERT_FALSE(p.is_null()) << i;
    EXPECT_EQ(p["params"]["progressToken"], "tok");
    EXPECT_EQ(p["params"]["progress"], i);
    EXPECT_EQ(p["params"]["total"], 3);
  }
}

TEST_F(GatewayTest, RelaysSamplingToTheCallingClientAndTheAnswerBack) {
  StartGateway();
  int id = next_id_++;
  Send(Json{{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", "t__sample"}, {"arguments", {{"prompt", "ping?"}}}}}});
  Json request = inbox_->Take([](const Json& m) {
    return m.value("method", "") == "sampling/createMessage" && m.contains("id");
  });
  ASSERT_FALSE(request.is_null());
  EXPECT_EQ(request["params"]["messages"][0]["content"]["text"], "ping?");
  Send(Json{{"jsonrpc", "2.0"},
            {"id", request["id"]},
            {"result",
             {{"role", "assistant"},
              {"model", "m"},
              {"content", {{"type", "text"}, {"text", "pong"}}}}}});
  Json response = inbox_->Response(id);
  EXPECT_EQ(Text(response["result"]), "sampled: pong");
}

TEST_F(GatewayTest, RelaysUpstreamLogMessagesToTheCall) {
  StartGateway();
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 3},
            {"method", "logging/setLevel"},
            {"params", {{"level", "debug"}}}});
  inbox_->Response(3);
  Json result = Call("t__log", {{"text", "from upstream"}});
  EXPECT_EQ(Text(result), "logged");
  Json log = inbox_->Notification("notifications/message");
  EXPECT_EQ(log["params"]["data"], "from upstream");
  EXPECT_EQ(log["params"]["logger"], "test");
}

// Titles and descriptions reach the model through tools/list and the other lists: an upstream's
// prose is scrubbed like its results, while names, URIs and schema structure are kept.
TEST_F(GatewayTest, ScrubsTheProseOfUpstreamCatalogs) {
  StartGateway();
  const std::string kRedacted = "[REDACTED:test-secret:SE...]";
  Send(Json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  const Json tools = inbox_->Response(2)["result"]["tools"];
  const Json secret = Named(tools, "t__secret");
  ASSERT_FALSE(secret.is_null()) << tools.dump();
  EXPECT_EQ(secret["description"], "returns a token like " + kRedacted);
  EXPECT_EQ(secret["inputSchema"]["properties"]["note"]["description"], "not " + kRedacted);
  EXPECT_EQ(secret["inputSchema"]["properties"]["note"]["type"], "string");

  Send(Json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "resources/list"}});
  Json resources = inbox_->Response(3)["result"]["resources"];
  ASSERT_EQ(resources.size(), 1u) << resources.dump();
  EXPECT_EQ(resources[0]["description"], "says " + kRedacted);
  EXPECT_EQ(resources[0]["uri"], "contextd+upstream://t/test://greeting");

  Send(Json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "resources/templates/list"}});
  Json templates = inbox_->Response(4)["result"]["resourceTemplates"];
  ASSERT_EQ(templates.size(), 1u) << templates.dump();
  EXPECT_EQ(templates[0]["title"], "item " + kRedacted);

  Send(Json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "prompts/list"}});
  const Json prompts = inbox_->Response(5)["result"]["prompts"];
  const Json greet = Named(prompts, "t__greet");
  ASSERT_FALSE(greet.is_null()) << prompts.dump();
  EXPECT_EQ(greet["arguments"][0]["description"], "whom, not " + kRedacted);
}

TEST_F(GatewayTest, ReListsToolsOnListChanged) {
  StartGateway();
  EXPECT_EQ(Text(Call("t__add_tool", Json::object())), "added");
  ASSERT_FALSE(inbox_->Notification("notifications/tools/list_changed").is_null());
  EXPECT_EQ(Text(Call("t__extra", Json::object())), "extra");
}

TEST_F(GatewayTest, ReadsUpstreamResourcesThroughReversibleUris) {
  StartGateway();
  Send(Json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "resources/list"}});
  Json list = inbox_->Response(4)["result"]["resources"];
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_EQ(list[0]["uri"], "contextd+upstream://t/test://greeting");
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 5},
            {"method", "resources/read"},
            {"params", {{"uri", "contextd+upstream://t/test://greeting"}}}});
  Json contents = inbox_->Response(5)["result"]["contents"];
  ASSERT_EQ(contents.size(), 1u);
  EXPECT_EQ(contents[0]["uri"], "contextd+upstream://t/test://greeting");
  EXPECT_EQ(contents[0]["text"].get<std::string>().find("SECRET123"), std::string::npos);
  // The uri is the label of the charge and of the trail event: stored scrubbed.
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 6},
            {"method", "resources/read"},
            {"params", {{"uri", "contextd+upstream://t/test://item/1?key=SECRET123"}}}});
  ASSERT_FALSE(inbox_->Response(6)["result"].is_null());
  std::lock_guard<std::mutex> lock(observer_.mu);
  ASSERT_EQ(observer_.calls.size(), 2u);
  EXPECT_EQ(observer_.calls[1].tool.find("SECRET123"), std::string::npos)
      << observer_.calls[1].tool;
  EXPECT_NE(observer_.calls[1].tool.find("contextd+upstream://t/test://item/1"), std::string::npos);
}

TEST_F(GatewayTest, ReExposesUpstreamPromptsAndScrubsTheirMessages) {
  StartGateway();
  Send(Json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "prompts/list"}});
  Json prompts = inbox_->Response(4)["result"]["prompts"];
  Json greet = Named(prompts, "t__greet");
  ASSERT_FALSE(greet.is_null()) << prompts.dump();
  EXPECT_EQ(greet["description"], "greets someone");
  EXPECT_EQ(greet["arguments"][0]["name"], "who");
  EXPECT_EQ(greet["arguments"][0]["required"], true);

  Send(Json{{"jsonrpc", "2.0"},
            {"id", 5},
            {"method", "prompts/get"},
            {"params", {{"name", "t__greet"}, {"arguments", {{"who", "ann"}}}}}});
  Json result = inbox_->Response(5)["result"];
  EXPECT_EQ(result["description"], "greeting [REDACTED:test-secret:SE...]");
  ASSERT_EQ(result["messages"].size(), 2u) << result.dump();
  EXPECT_EQ(result["messages"][0]["role"], "user");
  EXPECT_EQ(result["messages"][0]["content"]["text"], "hello ann [REDACTED:test-secret:SE...]");
  EXPECT_EQ(result["messages"][1]["content"]["resource"]["text"],
            "key [REDACTED:test-secret:SE...]");
  {
    std::lock_guard<std::mutex> lock(observer_.mu);
    ASSERT_EQ(observer_.calls.size(), 1u);
    EXPECT_EQ(observer_.calls[0].tool, "t__greet");
    EXPECT_EQ(observer_.calls[0].result.find("SECRET123"), std::string::npos);
    EXPECT_GT(observer_.calls[0].result_tokens, 0);
  }

  // The engine checks required arguments; the upstream's errors and bad results become clear
  // JSON-RPC errors.
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 6},
            {"method", "prompts/get"},
            {"params", {{"name", "t__greet"}}}});
  EXPECT_EQ(inbox_->Response(6)["error"]["code"], -32602);
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 7},
            {"method", "prompts/get"},
            {"params", {{"name", "t__malformed"}}}});
  Json error = inbox_->Response(7)["error"];
  EXPECT_EQ(error["code"], -32603);
  EXPECT_EQ(error["message"], "upstream t sent a malformed prompts/get result");
}

TEST_F(GatewayTest, SlowUpstreamPromptAnswersAnErrorWithinTheTimeout) {
  StartGateway(300ms);
  auto start = std::chrono::steady_clock::now();
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 4},
            {"method", "prompts/get"},
            {"params", {{"name", "t__slow_prompt"}, {"arguments", {{"ms", "5000"}}}}}});
  Json error = inbox_->Response(4)["error"];
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(error["code"], -32603);
  EXPECT_EQ(error["message"], "upstream t unavailable: no answer to prompts/get within 300 ms");
}

TEST_F(GatewayTest, RemovesResourcesTemplatesAndPromptsThatVanishUpstream) {
  StartGateway();
  // The first catalog's notifications.
  ASSERT_FALSE(inbox_->Notification("notifications/resources/list_changed").is_null());
  ASSERT_FALSE(inbox_->Notification("notifications/prompts/list_changed").is_null());
  Send(Json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "resources/templates/list"}});
  Json templates = inbox_->Response(4)["result"]["resourceTemplates"];
  ASSERT_EQ(templates.size(), 1u);
  EXPECT_EQ(templates[0]["uriTemplate"], "contextd+upstream://t/test://item/{id}");

  EXPECT_EQ(Text(Call("t__drop", Json::object())), "dropped");
  ASSERT_FALSE(inbox_->Notification("notifications/resources/list_changed").is_null());
  ASSERT_FALSE(inbox_->Notification("notifications/prompts/list_changed").is_null());
  Send(Json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "resources/list"}});
  EXPECT_EQ(inbox_->Response(5)["result"]["resources"], Json::array());
  Send(Json{{"jsonrpc", "2.0"}, {"id", 6}, {"method", "resources/templates/list"}});
  EXPECT_EQ(inbox_->Response(6)["result"]["resourceTemplates"], Json::array());
  Send(Json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "prompts/list"}});
  Json prompts = inbox_->Response(7)["result"]["prompts"];
  ASSERT_TRUE(prompts.is_array());
  for (const auto& p : prompts) EXPECT_NE(p["name"], "t__greet");
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 8},
            {"method", "resources/read"},
            {"params", {{"uri", "contextd+upstream://t/test://greeting"}}}});
  EXPECT_EQ(inbox_->Response(8)["error"]["code"], -32002);
  Send(Json{{"jsonrpc", "2.0"},
            {"id", 9},
            {"method", "prompts/get"},
            {"params", {{"name", "t__greet"}, {"arguments", {{"who", "x"}}}}}});
  EXPECT_EQ(inbox_->Response(9)["error"]["code"], -32602);
}

#ifdef CONTEXTD_GATEWAY_HTTP_TEST
// An upstream reached over Streamable HTTP: another McpServer served by contextd's own HTTP
// transport on 127.0.0.1 port 0.
TEST_F(GatewayTest, ProxiesAStreamableHttpUpstreamWithProgress) {
  base::ThreadExecutor upstream_executor;
  auto upstream =
      std::make_shared<protocol::McpServer>(upstream_executor, protocol::ServerInfo{"up", "1", ""});
  ASSERT_TRUE(
      upstream
          ->AddTool(protocol::ToolDefinition{"hello", "", "says hello",
                                             Json{{"type", "object"},
                                                  {"properties", {{"name", {{"type", "string"}}}}}},
                                             nullptr, nullptr},
                    [](std::shared_ptr<protocol::ToolCall> call) {
                      call->SendProgress(1, 2, "half");
                      call->SendProgress(2, 2, "all");
                      call->Finish(protocol::TextResult(
                          "hi " + call->arguments().value("name", "") + " SECRET123"));
                    })
          .ok());
  transport::HttpServerOptions options;
  auto http = transport::HttpServer::Start(options, upstream);
  ASSERT_TRUE(http.ok()) << http.status();
  UpstreamConfig config;
  config.name = "t";
  config.http = HttpUpstream{(*http)->listen_url(), {{"X-Test", "1"}}, ""};
  StartGateway(config);
  Json result = Call("t__hello", {{"name", "ann"}}, {{"progressToken", 7}});
  EXPECT_EQ(Text(result), "hi ann [REDACTED:test-secret:SE...]") << result.dump();
  Json p1 = inbox_->Notification("notifications/progress", 2s);
  Json p2 = inbox_->Notification("notifications/progress", 2s);
  ASSERT_FALSE(p1.is_null());
  ASSERT_FALSE(p2.is_null());
  EXPECT_EQ(p1["params"]["progressToken"], 7);
  EXPECT_EQ(p2["params"]["progress"], 2);
  EXPECT_EQ(p2["params"]["message"], "all");
  (*http)->Stop();
  // The upstream is gone: calls fail with unavailable instead of hanging.
  Json down = Call("t__hello", {{"name", "bob"}});
  EXPECT_TRUE(down.value("isError", false));
  EXPECT_NE(Text(down).find("upstream t"), std::string::npos) << Text(down);
  executor_.RunSync([&] { gateway_->Stop(); });
  upstream_executor.Stop();
}

// Upstream messages unrelated to a request (here tools/list_changed) arrive on the standalone
// GET stream of an HTTP upstream.
TEST_F(GatewayTest, ReceivesListChangedOfAnHttpUpstreamOnItsGetStream) {
  base::ThreadExecutor upstream_executor;
  auto upstream =
      std::make_shared<protocol::McpServer>(upstream_executor, protocol::ServerInfo{"up", "1", ""});
  auto add = [&](const std::string& name) {
    return upstream->AddTool(
        protocol::ToolDefinition{name, "", "", Json{{"type", "object"}}, nullptr, nullptr},
        [name](std::shared_ptr<protocol::ToolCall> call) {
          call->Finish(protocol::TextResult("from " + name));
        });
  };
  ASSERT_TRUE(add("one").ok());
  auto http = transport::HttpServer::Start(transport::HttpServerOptions{}, upstream);
  ASSERT_TRUE(http.ok()) << http.status();
  UpstreamConfig config;
  config.name = "t";
  config.http = HttpUpstream{(*http)->listen_url(), {}, ""};
  StartGateway(config);
  ASSERT_TRUE(add("two").ok());
  // A notification sent before the gateway's GET stream is attached is not replayed to it, so
  // notify until the gateway has re-listed (bounded).
  bool relisted = false;
  for (int i = 0; i < 100 && !relisted; ++i) {
    upstream->NotifyToolsListChanged();
    relisted = !inbox_->Notification("notifications/tools/list_changed", 100ms).is_null();
  }
  ASSERT_TRUE(relisted);
  EXPECT_EQ(Text(Call("t__two", Json::object())), "from two");
  (*http)->Stop();
  executor_.RunSync([&] { gateway_->Stop(); });
  upstream_executor.Stop();
}
#endif

TEST(GatewayUri, MapsBothWays) {
  EXPECT_EQ(Gateway::ExposedUri("fs", "file:///a/b"), "contextd+upstream://fs/file:///a/b");
  auto back = Gateway::OriginalUri("contextd+upstream://fs/file:///a/b");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->first, "fs");
  EXPECT_EQ(back->second, "file:///a/b");
  EXPECT_FALSE(Gateway::OriginalUri("file:///a").ok());
}

TEST(ScrubToolResult, ScrubsTextBlocksEmbeddedResourcesAndStructuredStrings) {
  folding::testing::FakeScrubber scrubber;
  protocol::ToolResult result;
  result.content =
      Json::array({{{"type", "text"}, {"text", "a SECRET123"}},
                   {{"type", "image"}, {"data", "SECRET123"}},
                   {{"type", "resource"}, {"resource", {{"uri", "x"}, {"text", "b SECRET123"}}}}});
  result.structured_content = {{"k", {"SECRET123"}}};
  std::string text = ScrubToolResult(scrubber, result);
  EXPECT_EQ(text.find("SECRET123"), std::string::npos);
  EXPECT_EQ(result.content[0]["text"], "a [REDACTED:test-secret:SE...]");
  EXPECT_EQ(result.content[2]["resource"]["text"], "b [REDACTED:test-secret:SE...]");
  EXPECT_EQ(result.structured_content["k"][0], "[REDACTED:test-secret:SE...]");
  EXPECT_EQ(text,
            "a [REDACTED:test-secret:SE...]\nb [REDACTED:test-secret:SE...]\n"
            "{\"k\":[\"[REDACTED:test-secret:SE...]\"]}");
}

}  // namespace
}  // namespace contextd::gateway
