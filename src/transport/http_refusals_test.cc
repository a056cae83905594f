// The listener's own refusals (Host and Origin 403, 401, 405, 408, 413, 431, malformed 400)
// answered in the shape of the route the request was meant for (HttpRoute::error_response), and
// in JSON-RPC shape where the route has none or no route matches (a failing handler's 500:
// http_routes_test). Real sockets on 127.0.0.1.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "transport/http_server.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"

namespace contextd::transport {
namespace {

using Json = nlohmann::json;
using testing::EchoSessionFactory;
using testing::RawClient;
using testing::Response;

// A route whose refusals carry their own shape: {"shape": "route", "status": N, "message": ...}.
HttpRoute ShapedRoute(std::string path, RouteAuth auth = RouteAuth::kNone) {
  HttpRoute r;
  r.name = path;
  r.methods = {"POST"};
  r.path = std::move(path);
  r.auth = auth;
  r.max_body_bytes = 1000;
  r.error_response = [](int status, std::string_view message) {
    return HttpResponse{status,
                        "application/json",
                        {{"X-Shape", "route"}},
                        Json{{"shape", "route"}, {"status", status}, {"message", message}}.dump()};
  };
  r.handler = [](HttpRequest, std::shared_ptr<HttpResponder> responder) {
    responder->Respond({200, "text/plain", {}, "ok"});
  };
  return r;
}

std::string Request(const std::string& target, const std::string& headers, const std::string& body,
                    const std::string& method = "POST") {
  return method + " " + target + " HTTP/1.1\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The route's shape, checked: the status in the body matches the response's.
void ExpectShaped(const Response& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.header("x-shape"), "route") << r.body;
  Json body = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_EQ(body["shape"], "route");
  EXPECT_EQ(body["status"], status);
}

// JSON-RPC's shape: {"jsonrpc": "2.0", "error": {...}}.
void ExpectJsonRpc(const Response& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  Json body = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_EQ(body["jsonrpc"], "2.0") << r.body;
  EXPECT_TRUE(body["error"].is_object()) << r.body;
}

class HttpRefusalsTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions o) {
    o.routes.push_back(ShapedRoute("/v1/shaped"));
    o.routes.push_back(ShapedRoute("/v1/private", RouteAuth::kBearer));
    o.bearer_tokens = {{"tok", "team"}};
    auto s = HttpServer::Start(std::move(o), std::make_shared<EchoSessionFactory>(true));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  Response Send(const std::string& bytes) {
    RawClient c(server_->port());
    c.Send(bytes);
    return c.ReadResponse();
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpRefusalsTest, RefusalsBeforeTheHandlerTakeTheRoutesShape) {
  HttpServerOptions o;
  o.max_header_bytes = 2048;
  Start(o);
  const std::string host = "Host: 127.0.0.1\r\n";
  ExpectShaped(Send(Request("/v1/shaped", "Host: evil.example\r\n", "{}")), 403);
  ExpectShaped(Send(Request("/v1/shaped", host + "Origin: http://evil.example\r\n", "{}")), 403);
  Response r = Send(Request("/v1/shaped", host, "", "GET"));
  ExpectShaped(r, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  r = Send(Request("/v1/private", host, "{}"));
  ExpectShaped(r, 401);
  EXPECT_EQ(r.header("www-authenticate").rfind("Bearer", 0), 0u);
  ExpectShaped(Send(Request("/v1/shaped", host, std::string(2000, 'x'))), 413);
  // Over the header limit: refused before the parser reads the request line.
  ExpectShaped(
      Send(Request("/v1/shaped?x=1", host + "X-Big: " + std::string(4000, 'a') + "\r\n", "{}")),
      431);
  ExpectShaped(Send(Request("/v1/shaped", host + "Bad Header Line\r\n", "{}")), 400);
  // The route's handler is still reached by a good request.
  EXPECT_EQ(Send(Request("/v1/shaped", host, "{}")).status, 200);
}

TEST_F(HttpRefusalsTest, ARequestNotReceivedInTimeGets408AndTheConnectionCloses) {
  HttpServerOptions o;
  o.header_timeout = std::chrono::milliseconds(100);
  o.body_timeout = std::chrono::milliseconds(100);
  o.keep_alive_timeout = std::chrono::milliseconds(300);
  Start(o);
  {
    RawClient c(server_->port());
    c.Send("POST /v1/shaped HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    ExpectShaped(c.ReadResponse(), 408);
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    RawClient c(server_->port());
    c.Send("POST /v1/shaped HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"a\":");
    Response r = c.ReadResponse();
    ExpectShaped(r, 408);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    // /mcp has no shape of its own: JSON-RPC.
    RawClient c(server_->port());
    c.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    ExpectJsonRpc(c.ReadResponse(), 408);
  }
  {
    // A connection that sent nothing is closed without an answer.
    RawClient c(server_->port());
    EXPECT_TRUE(c.WaitClosed());
  }
}

TEST_F(HttpRefusalsTest, RoutesWithoutAShapeAndUnknownPathsKeepJsonRpc) {
  HttpServerOptions o;
  o.max_header_bytes = 2048;
  Start(o);
  const std::string host = "Host: 127.0.0.1\r\n";
  ExpectJsonRpc(Send(Request("/mcp", host + "X-Big: " + std::string(4000, 'a') + "\r\n", "{}")),
                431);
  ExpectJsonRpc(Send(Request("/nowhere", "Host: evil.example\r\n", "{}")), 403);
  ExpectJsonRpc(Send(Request("/nowhere", host, "{}")), 404);
  ExpectJsonRpc(Send("NOT A REQUEST LINE\r\n\r\n"), 400);
}

}  // namespace
}  // namespace contextd::transport
