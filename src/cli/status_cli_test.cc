#include "cli/status_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "transport/http_server.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParsePrometheusTextTest, SamplesLabelsEscapesAndSpecialValues) {
  auto s = ParsePrometheusText(
      "# HELP a_total A counter.\n"
      "# TYPE a_total counter\n"
      "a_total 3\n"
      "b{x=\"1\",y=\"q\\\"u\\\\o\\nte\"} 2.5 1700000000000\r\n"
      "\n"
      "c{} NaN\n"
      "d{z=\"with spaces, and } brace\",} +Inf\n"
      "  e -1e3\n"
      "broken{x=\"1\" 1\n"
      "f{x=1} 2\n"
      "g notanumber\n"
      "h");
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].name, "a_total");
  EXPECT_EQ(s[0].value, 3);
  EXPECT_EQ(s[1].name, "b");
  EXPECT_EQ(s[1].labels.at("x"), "1");
  EXPECT_EQ(s[1].labels.at("y"), "q\"u\\o\nte");
  EXPECT_EQ(s[1].value, 2.5);
  EXPECT_TRUE(std::isnan(s[2].value));
  EXPECT_EQ(s[3].labels.at("z"), "with spaces, and } brace");
  EXPECT_TRUE(std::isinf(s[3].value));
  EXPECT_EQ(s[4].name, "e");
  EXPECT_EQ(s[4].value, -1000);
}

TEST(ParsePrometheusTextTest, NeverThrowsOnJunk) {
  for (const char* junk :
       {"{", "\"", "a{", "a{b", "a{b=", "a{b=\"", "a{b=\"\\", "a 1 2 3", "\xff\xfe"}) {
    EXPECT_NO_THROW(ParsePrometheusText(junk)) << junk;
  }
}

class StatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "contextd_status_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/home");
    fs::create_directories(root_ + "/project");
    env_.home = root_ + "/home";
    env_.cwd = root_ + "/project";
  }
  void TearDown() override {
    server_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // `conversations`: the body of GET /api/v1/conversations, or "" for a server without it.
  void Start(std::string model_metrics, std::map<std::string, std::string> tokens = {},
             std::string conversations = "") {
    transport::HttpServerOptions o;
    o.port = 0;
    o.bearer_tokens = std::move(tokens);
    if (!conversations.empty()) {
      transport::HttpRoute route;
      route.name = "conversations";
      route.methods = {"GET"};
      route.path = "/api/v1/conversations";
      route.handler = [this, conversations](transport::HttpRequest request,
                                            std::shared_ptr<transport::HttpResponder> responder) {
        conversations_query_ = std::string(request.query());
        transport::HttpResponse r;
        r.content_type = "application/json";
        r.body = conversations;
        responder->Respond(std::move(r));
      };
      o.routes.push_back(std::move(route));
    }
    o.metrics = [model_metrics] { return model_metrics; };
    auto s =
        transport::HttpServer::Start(o, std::make_shared<transport::testing::EchoSessionFactory>());
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  int Run(const std::string& token_file = "") {
    StatusCommand c;
    c.url = url_;
    c.token_file = token_file;
    c.now = [] { return 1700000100.0; };
    out_.str("");
    err_.str("");
    return RunStatusCommand(c, env_, out_, err_);
  }

  std::string root_, url_;
  std::string conversations_query_;  // written on the listener's thread, read after Run
  AgentEnvironment env_;
  std::unique_ptr<transport::HttpServer> server_;
  std::ostringstream out_, err_;
};

TEST_F(StatusTest, ReportsMcpAndModelRequests) {
  Start(
      "# TYPE contextd_model_requests_total counter\n"
      "contextd_model_requests_total{api=\"anthropic\",status=\"200\"} 4\n"
      "contextd_model_requests_total{api=\"anthropic\",status=\"529\"} 1\n"
      "# TYPE contextd_model_last_request_timestamp_seconds gauge\n"
      "contextd_model_last_request_timestamp_seconds{api=\"anthropic\"} 1700000088\n"
      "contextd_model_requests_total{api=\"openai_chat\",status=\"200\"} 3\n"
      "contextd_model_requests_total{api=\"openai\",status=\"200\"} 1\n"
      "contextd_model_requests_total{api=\"openai_responses\",status=\"400\"} 2\n"
      "contextd_model_requests_total{api=\"gemini\",status=\"200\"} 6\n"
      "contextd_tool_call_seconds_count{tool=\"branch_create\"} 2\n");
  transport::testing::RawClient c(server_->port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(c.Post(transport::testing::InitBody()).status, 200);
  ASSERT_EQ(Run(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("server: up at " + url_));
  EXPECT_THAT(out_.str(),
              HasSubstr("mcp: 1 open session(s), 1 request(s) answered, 2 tool call(s)"));
  EXPECT_THAT(out_.str(), HasSubstr("model: 5 request(s) to the Anthropic API (status 200: 4, "
                                    "status 529: 1), last 12 s ago"));
  EXPECT_THAT(out_.str(),
              HasSubstr("model: 3 request(s) to OpenAI Chat Completions (status 200: 3)\n"));
  EXPECT_THAT(out_.str(), HasSubstr("model: 2 request(s) to OpenAI Responses (status 400: 2)\n"));
  // An API the table does not know yet (a new row of the gateway's) by its label.
  EXPECT_THAT(out_.str(), HasSubstr("model: 6 request(s) to gemini (status 200: 6)\n"));
  EXPECT_THAT(out_.str(), HasSubstr("not connected: run `contextd connect claude-code`"));
  // A server without /api/v1/conversations: nothing about conversations.
  EXPECT_THAT(out_.str(), Not(HasSubstr("model conversations")));
}

TEST_F(StatusTest, ListsConversationsWithFoldsMadeAndSkipped) {
  Start("contextd_model_requests_total{api=\"anthropic\",status=\"200\"} 7\n",
        {{"status-conversations-token-0123456789", "local"}},
        R"({"tenant":"local","model_gateway":true,"conversations":[
          {"conversation":"0f3c2a9e-5b7d-4c1e-9a8b-2d6e4f1a3c5b","project":"web","requests":5,
           "folds_made":2,"folds_skipped":3,
           "folds_skipped_by_reason":{"not_at_tail":2,"unknown_block":1},
           "tokens_before":10000,"tokens_after":7500,"tokens_saved":2500,
           "isolated_requests":4,"view_tokens_spared":1800,
           "first_at_ms":1700000000000,"last_at_ms":1700000088000},
          {"conversation":"m:ab12","project":"default","requests":2,"folds_made":1,
           "folds_skipped":0,"folds_skipped_by_reason":{},"tokens_before":0,"tokens_after":0,
           "tokens_saved":0,"first_at_ms":1699990000000,"last_at_ms":1699990000000}]})");
  std::string token_file = root_ + "/tokens";
  std::ofstream(token_file) << "local:status-conversations-token-0123456789\n";
  ASSERT_EQ(Run(token_file), 0) << err_.str();
  EXPECT_EQ(conversations_query_, "limit=10");
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("model conversations (most recent first"));
  EXPECT_THAT(out, HasSubstr("conversation"));
  EXPECT_THAT(out, HasSubstr("0f3c2a9e-5b7d-4c1e-9a8b-2d.."));  // cut to its column
  EXPECT_THAT(out,
              HasSubstr("        5      2        3         4     2500 (25%)  12 s ago  skipped: "
                        "not_at_tail 2, unknown_block 1\n"));
  EXPECT_THAT(out, HasSubstr("m:ab12"));
  EXPECT_THAT(out, HasSubstr("        2      1        0         0              0  2 h ago\n"));
  // In the order the server gave (most recent first), after the model lines.
  EXPECT_LT(out.find("model: 7 request(s)"), out.find("model conversations"));
  EXPECT_LT(out.find("0f3c2a9e"), out.find("m:ab12"));
}

TEST_F(StatusTest, NoConversationsOrAnUnreadableAnswerPrintNothing) {
  for (const char* body : {R"({"conversations":[]})", "not json", R"({"conversations":5})"}) {
    Start("", {}, body);
    ASSERT_EQ(Run(), 0) << err_.str();
    EXPECT_THAT(out_.str(), Not(HasSubstr("model conversations"))) << body;
    EXPECT_THAT(out_.str(), HasSubstr("Claude Code configuration:")) << body;
    server_.reset();
  }
}

TEST_F(StatusTest, NoModelMetricsSaysWhatToDo) {
  Start(
      "# HELP contextd_model_requests_total Model requests.\n# TYPE contextd_model_requests_total "
      "counter\n");
  ASSERT_EQ(Run(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("mcp: 0 open session(s), 0 request(s) answered, 0 tool "
                                    "call(s): no agent has connected yet"));
  EXPECT_THAT(out_.str(), HasSubstr("model: no model requests yet: is ANTHROPIC_BASE_URL=" + url_ +
                                    " set for the agent? run `contextd connect claude-code`"));
}

TEST_F(StatusTest, SaysWhichDependencyIsNotReady) {
  transport::HttpServerOptions o;
  o.port = 0;
  o.metrics = [] { return std::string(); };
  o.health = [] {
    transport::HealthAnswer answer;
    answer.ready = false;
    answer.json = R"({"status":"unavailable","version":"9.9","checks":{"database":{"status":"ok"},)"
                  R"("nats":{"status":"reconnecting","mode":"plain"}}})";
    return answer;
  };
  auto s =
      transport::HttpServer::Start(o, std::make_shared<transport::testing::EchoSessionFactory>());
  ASSERT_TRUE(s.ok()) << s.status();
  server_ = std::move(*s);
  url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  EXPECT_EQ(Run(), 1);
  EXPECT_THAT(out_.str(), HasSubstr("server: up, not ready at " + url_ + " (version 9.9)"));
  EXPECT_THAT(out_.str(), HasSubstr("  nats: reconnecting"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("is this contextd")));
}

TEST_F(StatusTest, ShowsWhetherClaudeCodePointsHere) {
  Start("");
  ConnectCommand connect;
  connect.url = url_;
  connect.data_dir = root_ + "/data";
  std::ostringstream ignored;
  ASSERT_EQ(RunConnectCommand(connect, env_, ignored, ignored), 0);
  std::ofstream(env_.home + "/.claude.json") << "{\"mcpServers\": {\"contextd\": {\"type\": "
                                                "\"http\", \"url\": \"http://127.0.0.1:1/mcp\"}}}";
  ASSERT_EQ(Run(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("project: " + env_.cwd + "/.mcp.json mcpServers.contextd: " +
                                    url_ + "/mcp (this server)"));
  EXPECT_THAT(out_.str(), HasSubstr("env.ANTHROPIC_BASE_URL: " + url_ + " (this server)"));
  EXPECT_THAT(out_.str(), HasSubstr("project: " + env_.cwd +
                                    "/.claude/settings.json env.ANTHROPIC_CUSTOM_HEADERS "
                                    "X-Contextd-Project: " +
                                    env_.cwd + " (this directory)"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("user: " + env_.home +
                                        "/.claude/settings.json env.ANTHROPIC_CUSTOM_HEADERS")));
  EXPECT_THAT(out_.str(), HasSubstr("user: " + env_.home +
                                    "/.claude.json mcpServers.contextd: "
                                    "http://127.0.0.1:1/mcp (another server)"));
  EXPECT_THAT(out_.str(), HasSubstr("user: " + env_.home +
                                    "/.claude/settings.json env.ANTHROPIC_BASE_URL: not set"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("not connected: run `contextd connect claude-code`")));
  EXPECT_THAT(out_.str(), HasSubstr("not connected: run `contextd connect codex`"));
}

TEST_F(StatusTest, ShowsWhetherCodexPointsHere) {
  Start("");
  ConnectCommand connect;
  connect.client = "codex";
  connect.url = url_;
  connect.data_dir = root_ + "/data";
  std::ostringstream ignored;
  ASSERT_EQ(RunConnectCommand(connect, env_, ignored, ignored), 0);
  ASSERT_EQ(Run(), 0) << err_.str();
  const std::string file = env_.home + "/.codex/config.toml";
  EXPECT_THAT(out_.str(), HasSubstr("Codex configuration:\n  " + file +
                                    " mcp_servers.contextd.url: " + url_ + "/mcp (this server)"));
  EXPECT_THAT(out_.str(), HasSubstr(file + " model_providers.contextd.base_url: " + url_ +
                                    "/v1 (this server)"));
  EXPECT_THAT(out_.str(), HasSubstr(file + " model_provider: contextd\n"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("not connected: run `contextd connect codex`")));

  // Another provider selected: the model requests bypass contextd, and status says so.
  ConnectCommand undo = connect;
  undo.undo = true;
  ASSERT_EQ(RunConnectCommand(undo, env_, ignored, ignored), 0);
  std::ofstream(file) << "model_provider = \"openai\"\n[mcp_servers.contextd]\nurl = \"" << url_
                      << "/mcp\"\n";
  ASSERT_EQ(Run(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr(" model_provider: openai (model requests do not go through "
                                    "contextd)"));
}

TEST_F(StatusTest, BearerTokenFromTokenFile) {
  const std::string token = "status-test-token-0123456789";
  Start("", {{token, "default"}});
  EXPECT_EQ(Run(), 1);
  EXPECT_THAT(out_.str(), HasSubstr("server: up"));
  EXPECT_THAT(err_.str(), HasSubstr("/metrics needs a bearer token: pass --token-file"));
  std::ofstream(root_ + "/tokens") << "# comment\n\ndefault:" << token << "\n";
  EXPECT_EQ(Run(root_ + "/tokens"), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("model: no model requests yet"));
  EXPECT_EQ(Run(root_ + "/missing"), 2);
  EXPECT_THAT(err_.str(), HasSubstr("cannot be read"));
}

TEST_F(StatusTest, UnreachableServerIsExitCodeOne) {
  // A port that was just free: bind, read it back, close.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  url_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  EXPECT_EQ(Run(), 1);
  EXPECT_THAT(err_.str(), HasSubstr("contextd is not reachable at " + url_));
  EXPECT_THAT(err_.str(), HasSubstr("contextd serve"));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(StatusTest, BadUrlIsAUsageError) {
  url_ = "https://127.0.0.1:9090";
  EXPECT_EQ(Run(), 2);
  EXPECT_THAT(err_.str(), HasSubstr("https is not supported"));
  url_ = "http://127.0.0.1:port";
  EXPECT_EQ(Run(), 2);
}

}  // namespace
}  // namespace contextd::cli
