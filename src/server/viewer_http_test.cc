// The viewer's routes and the MCP endpoint on a real listener (127.0.0.1, port 0) fed bytes that
// are not UTF-8 where the server echoes them (ids in paths and queries, Mcp-Session-Id,
// Last-Event-ID): every answer is a JSON error with the bytes replaced, and the server answers
// the next request. Also: an engine task that throws is counted on /metrics and the server goes
// on. Real SQLite stores in a temp dir, a real engine executor.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "base/foreign_text.h"
#include "nlohmann/json.hpp"
#include "server/metrics.h"
#include "store/backend.h"
#include "store/test_util.h"
#include "transport/http_server.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"
#include "viewer/trail_api.h"
#include "viewer/ui_routes.h"

namespace contextd::server {
namespace {

using Json = nlohmann::json;
using transport::testing::RawClient;
using transport::testing::Response;

constexpr char kToken[] = "viewer-token";

class ViewerHttpTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    store::BackendOptions options;
    options.sqlite_path = dir_.File("contextd.db");
    auto backend = store::OpenBackend(options);
    ASSERT_TRUE(backend.ok());
    backend_ = std::move(*backend);
    auto b = backend_->OpenBranchStore();
    auto t = backend_->OpenTrailStore();
    ASSERT_TRUE(b.ok() && t.ok());
    branches_ = std::move(*b);
    store_ = std::move(*t);
    trail_ = std::make_unique<trail::Trail>(*store_, clock_);
    api_ = std::make_unique<viewer::TrailApi>(*trail_, *store_, *branches_);
    tenant_ = GetParam() ? "acme" : "local";
    executor_.RunSync([&] {
      auto root = trail_->RootScope(trail::SessionRef{tenant_, "proj", "s1"});
      ASSERT_TRUE(root.ok());
      root_ = *root;
    });
    transport::HttpServerOptions o;
    if (GetParam()) o.bearer_tokens = {{kToken, "acme"}};
    o.routes = viewer::UiRoutes(*api_, executor_);
    o.metrics = [this] { return metrics_.Render(); };
    auto s = transport::HttpServer::Start(
        std::move(o), std::make_shared<transport::testing::EchoSessionFactory>(true));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    executor_.Stop();
  }

  std::string Auth() const {
    return GetParam() ? std::string("Authorization: Bearer ") + kToken + "\r\n" : "";
  }

  Response Get(RawClient& c, const std::string& target, const std::string& extra = "") {
    c.Send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server_->port()) +
           "\r\n" + Auth() + extra + "\r\n");
    return c.ReadResponse();
  }

  store::TempDir dir_;
  base::FakeClock clock_;
  std::unique_ptr<store::Backend> backend_;
  std::unique_ptr<folding::BranchStore> branches_;
  std::unique_ptr<trail::TrailStore> store_;
  std::unique_ptr<trail::Trail> trail_;
  std::unique_ptr<viewer::TrailApi> api_;
  std::string tenant_;
  std::string root_;
  Metrics metrics_;
  base::ThreadExecutor executor_;
  std::unique_ptr<transport::HttpServer> server_;
};

// Each /api/v1 path with `X` where an id (or a query value) goes.
const std::vector<std::string>& Templates() {
  static const std::vector<std::string> templates = {"/api/v1/sessions/X/scopes",
                                                     "/api/v1/sessions/X/stream",
                                                     "/api/v1/scopes/X/events",
                                                     "/api/v1/scopes/X/events/X",
                                                     "/api/v1/scopes/X/events/1",
                                                     "/api/v1/X",
                                                     "/api/v1/sessions/X",
                                                     "/api/v1/search?q=X",
                                                     "/api/v1/stats?days=X",
                                                     "/api/v1/sessions?limit=X",
                                                     "/api/v1/scopes/X/events?offset=X&limit=X"};
  return templates;
}

TEST_P(ViewerHttpTest, InvalidUtf8IdsOnEveryApiPathGetJsonAndTheServerGoesOn) {
  RawClient c(server_->port());
  ASSERT_TRUE(c.connected());
  for (const std::string bad : {"\xFF", "%FF", "\xC0\xAF", "a\xED\xA0\x80z", "%C0%AF%00"}) {
    for (std::string target : Templates()) {
      for (size_t at; (at = target.find('X')) != std::string::npos;) target.replace(at, 1, bad);
      Response r = Get(c, target);
      ASSERT_TRUE(r.ok) << target;
      const bool search = target.find("/search") != std::string::npos ||
                          target.find("/stats") != std::string::npos ||
                          target.find("sessions?") != std::string::npos;
      if (!search) {
        EXPECT_TRUE(r.status == 404 || r.status == 400) << target << " -> " << r.status;
      }
      EXPECT_TRUE(base::IsValidUtf8(r.body)) << target;
      Json body = Json::parse(r.body, nullptr, false);
      ASSERT_FALSE(body.is_discarded()) << target << " -> " << r.body;
      if (r.status >= 400) {
        EXPECT_TRUE(body["error"].is_string()) << target << " -> " << r.body;
      }
      // The server still answers.
      Response next = Get(c, "/api/v1/sessions/" + root_ + "/scopes");
      EXPECT_EQ(next.status, 200) << "after " << target;
    }
  }
}

TEST_P(ViewerHttpTest, TheNotFoundStreamEchoesTheIdReplaced) {
  RawClient c(server_->port());
  Response r = Get(c, "/api/v1/sessions/\xFF/stream");
  EXPECT_EQ(r.status, 404);
  Json body = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_NE(body["error"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos) << r.body;
  EXPECT_EQ(Get(c, "/api/v1/sessions").status, 200);
}

TEST_P(ViewerHttpTest, McpSessionIdAndLastEventIdThatAreNotUtf8GetJsonErrors) {
  RawClient c(server_->port());
  const std::string port = std::to_string(server_->port());
  for (const std::string header : {"Mcp-Session-Id: \xFF\xFE\r\n", "Mcp-Session-Id: %FF\r\n"}) {
    const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
    c.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n" + Auth() + header +
           "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body);
    Response r = c.ReadResponse();
    EXPECT_GE(r.status, 400) << header;
    EXPECT_FALSE(Json::parse(r.body, nullptr, false).is_discarded()) << r.body;
    Response stream =
        Get(c, "/mcp", header + "Accept: text/event-stream\r\nLast-Event-ID: \xFF\r\n");
    EXPECT_GE(stream.status, 400) << header;
    EXPECT_FALSE(Json::parse(stream.body, nullptr, false).is_discarded()) << stream.body;
  }
  EXPECT_EQ(Get(c, "/api/v1/sessions").status, 200);
}

TEST_P(ViewerHttpTest, AnEngineTaskThatThrowsIsCountedOnMetricsAndTheServerGoesOn) {
  RawClient c(server_->port());
  auto count = [&] {
    std::string text = Get(c, "/metrics").body;
    const std::string key = "contextd_internal_errors_total{where=\"executor\"} ";
    size_t at = text.find(key);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
  };
  const double before = count();
  ASSERT_GE(before, 0);
  executor_.Post([] { throw std::runtime_error("engine bug"); });
  executor_.RunSync([] {});
  EXPECT_EQ(count(), before + 1);
  EXPECT_EQ(Get(c, "/api/v1/sessions/" + root_ + "/scopes").status, 200);
}

INSTANTIATE_TEST_SUITE_P(WithAndWithoutTokens, ViewerHttpTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& tokens) {
                           return tokens.param ? "TokenFile" : "NoTokens";
                         });

}  // namespace
}  // namespace contextd::server
