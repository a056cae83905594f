// Routes other rooms register on the HttpServer's listener, the listener's counters in /metrics,
// and the lingering close after a 413. Real sockets on 127.0.0.1, port 0.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/executor.h"
#include "base/internal_errors.h"
#include "gtest/gtest.h"
#include "transport/http_server.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"

namespace contextd::transport {
namespace {

using testing::EchoSessionFactory;
using testing::InitBody;
using testing::Json;
using testing::RawClient;
using testing::Response;

std::string Get(uint16_t port, const std::string& method, const std::string& target,
                const std::string& extra = "", const std::string& body = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" +
         extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A route that answers with what it was given.
HttpRoute EchoRoute(std::vector<std::string> methods, std::string path, RouteMatch match,
                    RouteAuth auth) {
  HttpRoute r;
  r.name = path;
  r.methods = std::move(methods);
  r.path = std::move(path);
  r.match = match;
  r.auth = auth;
  r.check_host_and_origin = auth == RouteAuth::kBearer;
  r.handler = [](HttpRequest req, std::shared_ptr<HttpResponder> responder) {
    std::string body = std::string(req.method()) + "|" + std::string(req.path()) + "|" +
                       std::string(req.query()) + "|" + std::string(req.Header("x-api-key")) + "|" +
                       std::string(req.Header("authorization")) + "|" + req.tenant() + "|" +
                       req.body();
    responder->Respond(
        {200,
         "text/plain",
         {{"X-Route", req.path().empty() ? "-" : "r"}, {"X-Injected", "a\r\nSet-Cookie: x=1"}},
         body});
  };
  return r;
}

class HttpRoutesTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions o) {
    factory_ = std::make_shared<EchoSessionFactory>(true);
    auto s = HttpServer::Start(std::move(o), factory_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  std::shared_ptr<EchoSessionFactory> factory_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpRoutesTest, ExactAndPrefixRoutesWithPerRouteAuth) {
  HttpServerOptions o;
  o.bearer_tokens = {{"contextd-token", "team"}};
  o.routes.push_back(EchoRoute({"POST"}, "/v1/messages", RouteMatch::kExact, RouteAuth::kNone));
  o.routes.push_back(EchoRoute({"GET"}, "/v1/models", RouteMatch::kExact, RouteAuth::kNone));
  o.routes.push_back(EchoRoute({"HEAD"}, "/", RouteMatch::kExact, RouteAuth::kNone));
  o.routes.push_back(EchoRoute({"GET"}, "/api/v1/", RouteMatch::kPrefix, RouteAuth::kBearer));
  o.routes.push_back(EchoRoute({"GET"}, "/api/v1/trail/", RouteMatch::kPrefix, RouteAuth::kBearer));
  Start(o);
  const uint16_t port = server_->port();
  RawClient c(port);
  // Provider credentials pass through untouched and are not contextd tokens.
  c.Send(Get(port, "POST", "/v1/messages?beta=true",
             "x-api-key: sk-ant-1\r\nAuthorization: Bearer sk-provider\r\n", "{\"a\":1}"));
  Response r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST|/v1/messages|beta=true|sk-ant-1|Bearer sk-provider||{\"a\":1}");
  EXPECT_EQ(r.header("x-route"), "r");
  EXPECT_EQ(r.header("x-injected"), "");  // a header that would split the response is dropped
  EXPECT_EQ(r.header("set-cookie"), "");
  c.Send(Get(port, "GET", "/v1/messages"));
  r = c.ReadResponse();
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  c.Send(Get(port, "GET", "/v1/models"));
  EXPECT_EQ(c.ReadResponse().status, 200);
  // Host/Origin checks are per route: off here, on for /api/v1/ and /mcp.
  c.Send(
      "GET /v1/models HTTP/1.1\r\nHost: gateway.example\r\nOrigin: https://app.example\r\n"
      "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 200);
  c.Send(
      "GET /api/v1/x HTTP/1.1\r\nHost: gateway.example\r\nAuthorization: Bearer "
      "contextd-token\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 403);
  c.Send(Get(port, "HEAD", "/"));
  r = c.ReadHead();
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.header("content-length"), "0");  // the length of the body HEAD leaves out
  // Bearer routes: 401 without the token, the tenant with it; the longest prefix wins.
  c.Send(Get(port, "GET", "/api/v1/trail/x"));
  EXPECT_EQ(c.ReadResponse().status, 401);
  c.Send(Get(port, "GET", "/api/v1/trail/x?n=1", "Authorization: Bearer contextd-token\r\n"));
  r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET|/api/v1/trail/x|n=1||Bearer contextd-token|team|");
  c.Send(Get(port, "GET", "/api/v2/x", "Authorization: Bearer contextd-token\r\n"));
  EXPECT_EQ(c.ReadResponse().status, 404);
  // /mcp still needs the token.
  EXPECT_EQ(c.Post(InitBody()).status, 401);
}

TEST(HttpRoutesStartTest, RouteWithoutHandlerIsInvalidArgument) {
  HttpServerOptions o;
  HttpRoute r;
  r.path = "/x";
  o.routes.push_back(r);
  auto s = HttpServer::Start(o, std::make_shared<EchoSessionFactory>());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpRoutesTest, StreamedResponseFromAnotherThreadThenKeepAlive) {
  std::atomic<int> confirmed{0};
  std::mutex mu;
  std::vector<std::thread> threads;
  HttpServerOptions o;
  HttpRoute r;
  r.methods = {"POST"};
  r.path = "/stream";
  r.auth = RouteAuth::kNone;
  r.handler = [&](HttpRequest, std::shared_ptr<HttpResponder> responder) {
    std::lock_guard<std::mutex> lock(mu);
    threads.emplace_back([&confirmed, responder] {
      responder->StartStream(200, "text/event-stream", {{"X-Upstream", "1"}});
      for (int i = 0; i < 3; ++i) {
        responder->Write("data: " + std::to_string(i) + "\n\n",
                         [&confirmed](bool ok) { confirmed += ok ? 1 : 100; });
      }
      responder->End();
    });
  };
  o.routes.push_back(r);
  Start(o);
  RawClient c(server_->port());
  c.Send(Get(server_->port(), "POST", "/stream"));
  Response head = c.ReadHead();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("x-upstream"), "1");
  EXPECT_EQ(head.header("transfer-encoding"), "chunked");
  EXPECT_EQ(c.ReadEvent(), "data: 0");
  EXPECT_EQ(c.ReadEvent(), "data: 1");
  EXPECT_EQ(c.ReadEvent(), "data: 2");
  EXPECT_EQ(c.ReadEvent(), "");  // the terminating chunk
  c.Send(Get(server_->port(), "GET", "/healthz"));
  EXPECT_EQ(c.ReadResponse().status, 200);
  EXPECT_EQ(confirmed.load(), 3);
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : threads) t.join();
}

TEST_F(HttpRoutesTest, AResponderReleasedWithoutAnAnswerGets500) {
  HttpServerOptions o;
  HttpRoute r;
  r.path = "/forgetful";
  r.auth = RouteAuth::kNone;
  r.handler = [](HttpRequest, std::shared_ptr<HttpResponder>) {};
  o.routes.push_back(r);
  Start(o);
  RawClient c(server_->port());
  c.Send(Get(server_->port(), "GET", "/forgetful"));
  EXPECT_EQ(c.ReadResponse().status, 500);
  c.Send(Get(server_->port(), "GET", "/healthz"));  // and the connection serves the next one
  EXPECT_EQ(c.ReadResponse().status, 200);
}

int64_t InternalErrors(const std::string& where) {
  for (const auto& [w, n] : base::InternalErrorCounts()) {
    if (w == where) return n;
  }
  return 0;
}

// A route whose handler fails in `how`: "throw" in the handler, "executor" in work it posted to
// the engine executor before answering, "io" in work it posted to the connection's thread.
HttpRoute FailingRoute(std::string path, std::string how, base::Executor* executor, bool shaped) {
  HttpRoute r;
  r.path = std::move(path);
  r.auth = RouteAuth::kNone;
  if (shaped) {
    r.error_response = [](int status, std::string_view message) {
      return HttpResponse{
          status,
          "application/json",
          {{"X-Shape", "provider"}},
          R"({"type":"error","error":{"message":")" + std::string(message) + R"("}})"};
    };
  }
  r.handler = [how = std::move(how), executor](HttpRequest,
                                               std::shared_ptr<HttpResponder> responder) {
    if (how == "throw") throw std::runtime_error("handler bug");
    if (how == "nonstd") throw 7;
    if (how == "executor") {
      executor->Post([responder] { throw std::out_of_range("engine bug"); });
    } else {
      responder->Post([] { throw std::runtime_error("io bug"); });
    }
  };
  return r;
}

TEST_F(HttpRoutesTest, AHandlerThatThrowsGets500InItsRoutesShapeAndTheServerGoesOn) {
  base::ThreadExecutor executor;
  HttpServerOptions o;
  o.routes.push_back(FailingRoute("/throw", "throw", &executor, false));
  o.routes.push_back(FailingRoute("/nonstd", "nonstd", &executor, false));
  o.routes.push_back(FailingRoute("/v1/throw", "throw", &executor, true));
  o.routes.push_back(FailingRoute("/v1/executor", "executor", &executor, true));
  o.routes.push_back(FailingRoute("/executor", "executor", &executor, false));
  o.routes.push_back(FailingRoute("/v1/io", "io", &executor, true));
  Start(o);
  const int64_t http_before = InternalErrors("http");
  const int64_t executor_before = InternalErrors("executor");
  RawClient c(server_->port());
  for (const char* target : {"/throw", "/nonstd", "/executor"}) {
    c.Send(Get(server_->port(), "GET", target));
    Response r = c.ReadResponse();
    EXPECT_EQ(r.status, 500) << target;
    EXPECT_EQ(r.header("x-shape"), "") << target;
    Json body = Json::parse(r.body, nullptr, false);  // a JSON-RPC error
    ASSERT_TRUE(body.is_object()) << r.body;
    EXPECT_TRUE(body["error"].is_object()) << r.body;
    EXPECT_EQ(body["jsonrpc"], "2.0") << r.body;
  }
  for (const char* target : {"/v1/throw", "/v1/executor", "/v1/io"}) {
    c.Send(Get(server_->port(), "GET", target));
    Response r = c.ReadResponse();
    EXPECT_EQ(r.status, 500) << target;
    EXPECT_EQ(r.header("x-shape"), "provider") << target;
    Json body = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.body;
    EXPECT_EQ(body["type"], "error") << r.body;
  }
  c.Send(Get(server_->port(), "GET", "/healthz"));  // the same connection serves the next one
  EXPECT_EQ(c.ReadResponse().status, 200);
  EXPECT_EQ(InternalErrors("http"), http_before + 4);
  executor.RunSync([] {});
  EXPECT_EQ(InternalErrors("executor"), executor_before + 2);
}

TEST_F(HttpRoutesTest, HealthzReportsReadiness) {
  HttpServerOptions o;
  std::atomic<bool> ready{true};
  o.health = [&ready] {
    HealthAnswer answer;
    answer.ready = ready.load();
    answer.json = answer.ready
                      ? R"({"status":"ok"})"
                      : R"({"status":"unavailable","checks":{"database":{"status":"error"}}})";
    return answer;
  };
  Start(o);
  RawClient c(server_->port());
  c.Send(Get(server_->port(), "GET", "/healthz"));
  EXPECT_EQ(c.ReadResponse().status, 200);
  ready = false;
  c.Send(Get(server_->port(), "GET", "/healthz"));
  Response r = c.ReadResponse();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find(R"("database":{"status":"error"})"), std::string::npos) << r.body;
}

// A route that keeps its responders for the test to use later.
struct Parked {
  std::mutex mu;
  std::condition_variable arrived;
  std::vector<std::shared_ptr<HttpResponder>> responders;
  std::promise<void> gone;

  // The first parked responder, once its request reached the handler (null after 5 s).
  std::shared_ptr<HttpResponder> First() {
    std::unique_lock<std::mutex> lock(mu);
    arrived.wait_for(lock, std::chrono::seconds(5), [this] { return !responders.empty(); });
    return responders.empty() ? nullptr : responders[0];
  }
};

HttpRoute ParkingRoute(const std::shared_ptr<Parked>& parked) {
  HttpRoute r;
  r.path = "/park";
  r.auth = RouteAuth::kNone;
  r.handler = [parked](HttpRequest, std::shared_ptr<HttpResponder> responder) {
    responder->OnClientGone([parked] { parked->gone.set_value(); });
    std::lock_guard<std::mutex> lock(parked->mu);
    parked->responders.push_back(std::move(responder));
    parked->arrived.notify_all();
  };
  return r;
}

TEST_F(HttpRoutesTest, ResponderAfterTheClientLeftDoesNothing) {
  auto parked = std::make_shared<Parked>();
  HttpServerOptions o;
  o.routes.push_back(ParkingRoute(parked));
  Start(o);
  auto gone = parked->gone.get_future();
  std::shared_ptr<HttpResponder> responder;
  {
    RawClient c(server_->port());
    c.Send(Get(server_->port(), "GET", "/park"));
    responder = parked->First();  // parked before the client leaves
    ASSERT_NE(responder, nullptr);
  }
  ASSERT_EQ(gone.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_TRUE(responder->closed());
  std::promise<bool> written;
  responder->StartStream(200, "text/plain");
  responder->Write("late", [&written](bool ok) { written.set_value(ok); });
  EXPECT_FALSE(written.get_future().get());
  responder->Respond({200, "text/plain", {}, "late"});
  responder->End();
}

TEST_F(HttpRoutesTest, ResponderOutlivingStopDoesNothing) {
  auto parked = std::make_shared<Parked>();
  HttpServerOptions o;
  o.routes.push_back(ParkingRoute(parked));
  Start(o);
  RawClient c(server_->port());
  c.Send(Get(server_->port(), "GET", "/park"));
  std::shared_ptr<HttpResponder> responder = parked->First();
  ASSERT_NE(responder, nullptr);
  EXPECT_FALSE(responder->closed());
  server_->Stop();
  EXPECT_TRUE(responder->closed());
  responder->Respond({200, "text/plain", {}, "after stop"});
  responder->Post([] { ADD_FAILURE() << "ran after Stop"; });
  server_.reset();
  responder.reset();
  parked->responders.clear();
}

// A client that writes its whole request before reading must read the 413, not a reset.
TEST_F(HttpRoutesTest, OversizeBodyIsAnsweredToAClientThatSendsItAll) {
  HttpServerOptions o;  // max_message_bytes: 4 MiB
  Start(o);
  const std::string body(8u << 20, ' ');
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server_->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  size_t off = 0;
  while (off < req.size()) {
    ssize_t n = send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << "send failed after " << off << " bytes: " << strerror(errno);
    off += static_cast<size_t>(n);
  }
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    ASSERT_GE(n, 0) << "read failed (reset?): " << strerror(errno);
    if (n == 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 413 ", 0), 0u) << got.substr(0, 200);
  EXPECT_EQ(server_->stats().payload_too_large, 1u);
}

// HttpRoute::max_body_bytes: above and below the server's default, whether the length is declared
// or the body is chunked; routes without one (and /mcp) keep HttpServerOptions::max_message_bytes.
TEST_F(HttpRoutesTest, PerRouteBodyLimits) {
  HttpServerOptions o;
  o.max_message_bytes = 1000;
  HttpRoute big = EchoRoute({"POST"}, "/big", RouteMatch::kExact, RouteAuth::kNone);
  big.max_body_bytes = 5000;
  HttpRoute small = EchoRoute({"POST"}, "/small", RouteMatch::kExact, RouteAuth::kNone);
  small.max_body_bytes = 100;
  o.routes.push_back(big);
  o.routes.push_back(small);
  o.routes.push_back(EchoRoute({"POST"}, "/default", RouteMatch::kExact, RouteAuth::kNone));
  Start(o);
  const uint16_t port = server_->port();
  auto chunked = [port](const std::string& target, size_t size) {
    std::string half(size / 2, 'c');
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx", half.size());
    std::string chunk = std::string(hex) + "\r\n" + half + "\r\n";
    return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
           "\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + "0\r\n\r\n";
  };
  struct Case {
    std::string target;
    size_t size;
    bool chunked;
    int status;
  };
  for (const Case& k : std::vector<Case>{{"/big", 3000, false, 200},
                                         {"/big", 3000, true, 200},
                                         {"/big", 5000, false, 200},
                                         {"/big", 6000, false, 413},
                                         {"/big", 6000, true, 413},
                                         {"/small", 100, false, 200},
                                         {"/small", 101, false, 413},
                                         {"/small", 500, true, 413},
                                         {"/default", 1000, false, 200},
                                         {"/default", 3000, false, 413},
                                         {"/default", 3000, true, 413},
                                         {"/nope", 3000, false, 413}}) {
    RawClient c(port);
    c.Send(k.chunked ? chunked(k.target, k.size)
                     : Get(port, "POST", k.target, "", std::string(k.size, 'b')));
    Response r = c.ReadResponse();
    EXPECT_EQ(r.status, k.status) << k.target << " " << k.size << (k.chunked ? " chunked" : "");
    if (k.status == 200) {
      EXPECT_EQ(r.body.size(), std::string("POST|").size() + k.target.size() + 5 + k.size)
          << k.target;
    } else {
      const size_t limit = k.target == "/big" ? 5000 : k.target == "/small" ? 100 : 1000;
      EXPECT_NE(r.body.find("exceeds " + std::to_string(limit) + " bytes"), std::string::npos)
          << r.body;
    }
  }
  // /mcp keeps the server's limit although another route accepts more.
  RawClient c(port);
  EXPECT_EQ(c.Post(std::string(3000, ' ')).status, 413);
  RawClient ok(port);
  EXPECT_EQ(ok.Post(InitBody()).status, 200);
}

TEST_F(HttpRoutesTest, MetricsCarryTheListenersCounters) {
  HttpServerOptions o;
  o.bearer_tokens = {{"t", "team"}};
  o.max_message_bytes = 1000;
  o.metrics = [] { return std::string("contextd_up 1\n"); };
  Start(o);
  const uint16_t port = server_->port();
  RawClient c(port);
  EXPECT_EQ(c.Post(InitBody(), "Authorization: Bearer t\r\n").status, 200);
  EXPECT_EQ(c.Post(InitBody()).status, 401);
  c.Send(Get(port, "GET", "/nope"));
  EXPECT_EQ(c.ReadResponse().status, 404);
  {
    RawClient big(port);
    EXPECT_EQ(big.Post(std::string(2000, ' '), "Authorization: Bearer t\r\n").status, 413);
  }
  c.Send(Get(port, "GET", "/metrics", "Authorization: Bearer t\r\n"));
  Response r = c.ReadResponse();
  ASSERT_EQ(r.status, 200);
  const std::string& m = r.body;
  EXPECT_EQ(m.rfind("contextd_up 1\n", 0), 0u);
  for (const char* line : {
           "contextd_http_responses_total{route=\"mcp\",code=\"2xx\"} 1\n",
           "contextd_http_responses_total{route=\"mcp\",code=\"4xx\"} 1\n",
           "contextd_http_responses_total{route=\"none\",code=\"4xx\"} 2\n",
           "contextd_http_auth_failures_total 1\n",
           "contextd_http_payload_too_large_total 1\n",
           "contextd_http_sessions_open 1\n",
           "\ncontextd_http_connections_open ",
           "contextd_http_connections_accepted_total 2\n",
           "# TYPE contextd_http_responses_total counter\n",
       }) {
    EXPECT_NE(m.find(line), std::string::npos) << line << " in\n" << m;
  }
  HttpServerStats s = server_->stats();
  EXPECT_EQ(s.auth_failures, 1u);
  EXPECT_EQ(s.sessions_open, 1u);
  EXPECT_EQ(s.connections_accepted, 2u);
  EXPECT_GT(s.bytes_received, 0u);
  EXPECT_GT(s.bytes_sent, 0u);
}

}  // namespace
}  // namespace contextd::transport
