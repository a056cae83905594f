#include "transport/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/jsonrpc.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"

namespace contextd::transport {
namespace {

using protocol::Json;
using testing::EchoSessionFactory;
using testing::EventData;
using testing::InitBody;
using testing::RawClient;
using testing::Req;
using testing::Response;

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions opts = {}, bool async = true) {
    factory_ = std::make_shared<EchoSessionFactory>(async);
    auto s = HttpServer::Start(std::move(opts), factory_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // Initializes a session on `c` and returns its id.
  std::string Init(RawClient& c, const std::string& extra = "") {
    Response r = c.Post(InitBody(), extra);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.header("mcp-session-id");
  }
  static std::string Sid(const std::string& id) { return "Mcp-Session-Id: " + id + "\r\n"; }

  std::shared_ptr<EchoSessionFactory> factory_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, InitializeIssuesSessionIdThenRequestsNeedIt) {
  StartServer();
  EXPECT_EQ(server_->listen_url(), "http://127.0.0.1:" + std::to_string(server_->port()) + "/mcp");
  RawClient c(server_->port());
  Response r = c.Post(InitBody());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "application/json");
  std::string sid = r.header("mcp-session-id");
  ASSERT_GE(sid.size(), 32u);
  for (char ch : sid) EXPECT_TRUE(ch > 0x20 && ch < 0x7f);
  EXPECT_EQ(Json::parse(r.body)["result"]["protocolVersion"], "2025-11-25");

  r = c.Post(Req(2, "ping"), Sid(sid) + "MCP-Protocol-Version: 2025-11-25\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["id"], 2);
  EXPECT_EQ(factory_->infos().at(0).session_id, sid);
  EXPECT_EQ(factory_->infos().at(0).transport, "http");
  EXPECT_EQ(factory_->infos().at(0).tenant, "local");

  r = c.Post(Req(3, "ping"));  // no session id
  EXPECT_EQ(r.status, 400);
  r = c.Post(Req(4, "ping"), Sid("0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(r.status, 404);
  r = c.Post(Req(5, "ping"), Sid(sid) + "MCP-Protocol-Version: 1999-01-01\r\n");
  EXPECT_EQ(r.status, 400);
}

TEST_F(HttpServerTest, NotificationsAndResponsesGet202) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  Response r = c.Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", Sid(sid));
  EXPECT_EQ(r.status, 202);
  EXPECT_TRUE(r.body.empty());
  r = c.Post(R"({"jsonrpc":"2.0","id":"srv-1","result":{}})", Sid(sid));
  EXPECT_EQ(r.status, 202);
  // The connection is still usable (keep-alive).
  r = c.Post(Req(9, "ping"), Sid(sid));
  EXPECT_EQ(r.status, 200);
  auto got = factory_->received_non_requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], "notification:notifications/initialized");
}

TEST_F(HttpServerTest, MalformedBodiesGet400WithJsonRpcError) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  Response r = c.Post("{not json", Sid(sid));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], protocol::kParseError);
  r = c.Post(std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}"), Sid(sid));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], protocol::kParseError);
  r = c.Post("[1,2", Sid(sid));
  EXPECT_EQ(r.status, 400);
  r = c.Post(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", Sid(sid));
  EXPECT_EQ(r.status, 400);
  r = c.Post(Req(1, "ping"), Sid(sid), "text/html");
  EXPECT_EQ(r.status, 406);
}

TEST_F(HttpServerTest, BatchIsAnsweredWithOneArray) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  Response r = c.Post("[" + Req(1, "ping") + "," + Req(2, "ping") +
                          R"(,{"jsonrpc":"2.0","method":"notifications/x"},7])",
                      Sid(sid), "application/json");
  ASSERT_EQ(r.status, 200);
  Json body = Json::parse(r.body);
  ASSERT_TRUE(body.is_array());
  EXPECT_EQ(body.size(), 3u);  // two results and the error for `7`
}

TEST_F(HttpServerTest, DnsRebindingHostAndOriginAreRejected) {
  StartServer();
  const std::string body = InitBody();
  auto raw = [&](const std::string& host, const std::string& origin) {
    RawClient c(server_->port());
    std::string r = "POST /mcp HTTP/1.1\r\nHost: " + host +
                    "\r\nAccept: application/json, text/event-stream\r\n"
                    "Content-Type: application/json\r\n";
    if (!origin.empty()) r += "Origin: " + origin + "\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    c.Send(r);
    return c.ReadResponse().status;
  };
  const std::string port = std::to_string(server_->port());
  EXPECT_EQ(raw("evil.example.com", "http://evil.example.com"), 403);
  EXPECT_EQ(raw("evil.example.com", ""), 403);
  EXPECT_EQ(raw("127.0.0.1:" + port, "http://evil.example.com"), 403);
  EXPECT_EQ(raw("127.0.0.1:" + port, "null"), 403);
  EXPECT_EQ(raw("localhost:" + port, "http://localhost:" + port), 200);
  EXPECT_EQ(raw("127.0.0.1:" + port, "http://127.0.0.1:" + port), 200);
  EXPECT_EQ(raw("[::1]:" + port, "https://[::1]:3000"), 200);
}

TEST_F(HttpServerTest, ConfiguredAllowlists) {
  HttpServerOptions o;
  o.allowed_hosts = {"mcp.example.com:8443"};
  o.allowed_origins = {"https://app.example.com"};
  StartServer(o);
  const std::string body = InitBody();
  auto raw = [&](const std::string& host, const std::string& origin) {
    RawClient c(server_->port());
    std::string r = "POST /mcp HTTP/1.1\r\nHost: " + host +
                    "\r\nAccept: application/json\r\nContent-Type: application/json\r\n";
    if (!origin.empty()) r += "Origin: " + origin + "\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    c.Send(r);
    return c.ReadResponse().status;
  };
  EXPECT_EQ(raw("mcp.example.com:8443", "https://app.example.com"), 200);
  EXPECT_EQ(raw("MCP.example.com:8443", "https://app.example.com:444"), 200);
  EXPECT_EQ(raw("mcp.example.com:8080", ""), 403);
  EXPECT_EQ(raw("localhost", ""), 403);
  EXPECT_EQ(raw("mcp.example.com:8443", "http://app.example.com"), 403);
}

TEST_F(HttpServerTest, BearerTokensSelectTenantAndGate) {
  HttpServerOptions o;
  o.bearer_tokens = {{"tok-a", "acme"}, {"tok-b", "beta"}};
  StartServer(o);
  RawClient c(server_->port());
  Response r = c.Post(InitBody());
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("www-authenticate").rfind("Bearer", 0), 0u);
  r = c.Post(InitBody(), "Authorization: Bearer wrong\r\n");
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.header("www-authenticate").find("invalid_token"), std::string::npos);
  std::string sid = Init(c, "Authorization: Bearer tok-a\r\n");
  ASSERT_FALSE(sid.empty());
  EXPECT_EQ(factory_->infos().at(0).tenant, "acme");
  r = c.Post(Req(2, "ping"), Sid(sid) + "Authorization: Bearer tok-a\r\n");
  EXPECT_EQ(r.status, 200);
  // Another tenant cannot use the session.
  r = c.Post(Req(3, "ping"), Sid(sid) + "Authorization: Bearer tok-b\r\n");
  EXPECT_EQ(r.status, 404);
}

TEST_F(HttpServerTest, OversizeBodyGets413AndOversizeHeadersGet431) {
  HttpServerOptions o;
  o.max_message_bytes = 1000;
  o.max_header_bytes = 2048;
  StartServer(o);
  {
    RawClient c(server_->port());
    Response r = c.Post(std::string(2000, ' '));
    EXPECT_EQ(r.status, 413);
  }
  {
    RawClient c(server_->port());
    Response r = c.Post(InitBody(), "X-Big: " + std::string(4000, 'a') + "\r\n");
    EXPECT_EQ(r.status, 431);
  }
}

TEST_F(HttpServerTest, RelatedMessagesSwitchThePostToAnSseStream) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("POST", Req(5, "tools/call", {{"notify", true}}), Sid(sid)));
  Response head = c.ReadHead();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  Json first = EventData(c.ReadEvent());
  EXPECT_EQ(first["method"], "notifications/message");
  Json second = EventData(c.ReadEvent());
  EXPECT_EQ(second["id"], 5);
  EXPECT_EQ(c.ReadEvent(), "");  // the stream ends after the response
  // Same connection serves the next request.
  Response r = c.Post(Req(6, "ping"), Sid(sid));
  EXPECT_EQ(r.status, 200);
}

TEST_F(HttpServerTest, SseOnlyClientGetsAStreamEvenForALoneResponse) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("POST", Req(8, "ping"), Sid(sid), "text/event-stream"));
  Response head = c.ReadHead();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  EXPECT_EQ(EventData(c.ReadEvent())["id"], 8);
  EXPECT_EQ(c.ReadEvent(), "");
}

TEST_F(HttpServerTest, GetStreamCarriesStandaloneMessagesWithReplay) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  RawClient g(server_->port());
  g.Send(g.Request("GET", "", Sid(sid), "text/event-stream"));
  Response head = g.ReadHead();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");

  // A second GET stream for the same session is refused.
  {
    RawClient g2(server_->port());
    g2.Send(g2.Request("GET", "", Sid(sid), "text/event-stream"));
    EXPECT_EQ(g2.ReadResponse().status, 409);
  }
  // JSON-only client: its related notification is rerouted to the GET stream.
  Response r = c.Post(Req(7, "tools/call", {{"notify", true}, {"standalone", true}}), Sid(sid),
                      "application/json");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["id"], 7);
  std::string ev1 = g.ReadEvent();
  std::string ev2 = g.ReadEvent();
  EXPECT_EQ(ev1.rfind("id: 1\n", 0), 0u) << ev1;
  EXPECT_EQ(ev2.rfind("id: 2\n", 0), 0u) << ev2;
  EXPECT_EQ(EventData(ev1)["method"], "notifications/message");

  // Resume after event 1: event 2 and what arrived meanwhile are replayed.
  g.Close();
  factory_->Broadcast(protocol::MakeNotification("notifications/tools/list_changed", nullptr));
  Json opened;
  for (int attempt = 0; attempt < 200; ++attempt) {  // the old stream detaches asynchronously
    RawClient g3(server_->port());
    g3.Send(g3.Request("GET", "", Sid(sid) + "Last-Event-ID: 1\r\n", "text/event-stream"));
    Response h3 = g3.ReadHead();
    if (h3.status == 409) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    ASSERT_EQ(h3.status, 200);
    std::string a = g3.ReadEvent();
    std::string b = g3.ReadEvent();
    EXPECT_EQ(a.rfind("id: 2\n", 0), 0u) << a;
    EXPECT_EQ(b.rfind("id: 3\n", 0), 0u) << b;
    EXPECT_EQ(EventData(b)["method"], "notifications/tools/list_changed");
    opened = true;
    break;
  }
  EXPECT_TRUE(opened == true);
}

// SEP-1699 polling: the engine closes a POST's stream before its answer; the client gets an
// event id and a retry delay, then resumes with GET and Last-Event-ID and reads the answer.
TEST_F(HttpServerTest, ClosedPostStreamIsResumedWithLastEventId) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  for (bool answer_first : {false, true}) {
    SCOPED_TRACE(answer_first ? "answer before the GET" : "answer during the GET");
    const int id = answer_first ? 12 : 11;
    c.Send(c.Request("POST",
                     Req(id, "tools/call", {{"close_stream", true}, {"hold", !answer_first}}),
                     Sid(sid)));
    Response head = c.ReadHead();
    ASSERT_EQ(head.status, 200);
    EXPECT_EQ(head.header("content-type"), "text/event-stream");
    std::string priming = c.ReadEvent();
    EXPECT_NE(priming.find("retry: 1000\n"), std::string::npos) << priming;
    ASSERT_EQ(priming.rfind("id: ", 0), 0u) << priming;
    const std::string last = priming.substr(4, priming.find('\n') - 4);
    EXPECT_EQ(c.ReadEvent(), "");  // the server ended the stream; the connection stays open
    RawClient g(server_->port());
    g.Send(g.Request("GET", "", Sid(sid) + "Last-Event-ID: " + last + "\r\n", "text/event-stream"));
    Response h = g.ReadHead();
    ASSERT_EQ(h.status, 200);
    if (!answer_first) {
      // The engine holds the answer after closing the stream: the client can see the close first.
      ASSERT_TRUE(factory_->WaitHeld(1));
      factory_->ReleaseHeld();
    }
    std::string ev = g.ReadEvent();
    EXPECT_EQ(EventData(ev)["id"], id) << ev;
    EXPECT_EQ(ev.rfind("id: ", 0), 0u) << ev;
    EXPECT_EQ(g.ReadEvent(), "");
    // The POST's connection serves the next request.
    EXPECT_EQ(c.Post(Req(20 + id, "ping"), Sid(sid)).status, 200);
  }
}

TEST_F(HttpServerTest, DeleteEndsTheSession) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("DELETE", "", Sid(sid)));
  EXPECT_EQ(c.ReadResponse().status, 200);
  EXPECT_EQ(factory_->close_reasons(), std::vector<std::string>{"client deleted session"});
  EXPECT_EQ(c.Post(Req(2, "ping"), Sid(sid)).status, 404);
  c.Send(c.Request("DELETE", "", Sid(sid)));
  EXPECT_EQ(c.ReadResponse().status, 404);
}

// DELETE is answered once the session says its end is durable (Session::CloseThen), with what
// the engine reported.
TEST_F(HttpServerTest, DeleteIsAnsweredOnlyOnceTheEndIsDurable) {
  StartServer();
  factory_->HoldCloseConfirmations();
  RawClient c(server_->port());
  RawClient d(server_->port());
  std::string sid1 = Init(c);
  std::string sid2 = Init(d);
  c.Send(c.Request("DELETE", "", Sid(sid1)));
  for (int i = 0; i < 500 && factory_->close_reasons().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(factory_->close_reasons(), std::vector<std::string>{"client deleted session"});
  // The session is gone at once, but the answer waits for the confirmation.
  EXPECT_EQ(d.Post(Req(2, "ping"), Sid(sid1)).status, 404);
  EXPECT_TRUE(c.QuietFor(200));
  EXPECT_EQ(factory_->ConfirmHeldCloses(absl::OkStatus()), 1);
  Response r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  // A lost end is a 500 that says so, and the connection goes on.
  c.Send(c.Request("DELETE", "", Sid(sid2)));
  for (int i = 0; i < 500 && factory_->close_reasons().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(c.QuietFor(50));
  EXPECT_EQ(factory_->ConfirmHeldCloses(absl::UnavailableError("disk gone")), 1);
  r = c.ReadResponse();
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("saving its end failed"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("disk gone"), std::string::npos) << r.body;  // not for the client
  EXPECT_EQ(c.Post(Req(3, "ping"), Sid(sid2)).status, 404);
}

TEST_F(HttpServerTest, ADeleteWhoseEndIsNeverConfirmedTimesOut) {
  HttpServerOptions o;
  o.request_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  factory_->HoldCloseConfirmations();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("DELETE", "", Sid(sid)));
  EXPECT_EQ(c.ReadResponse().status, 504);
  // A late confirmation finds the request answered and is dropped.
  EXPECT_EQ(factory_->ConfirmHeldCloses(absl::OkStatus()), 1);
  EXPECT_EQ(c.Post(Req(2, "ping"), Sid(sid)).status, 404);
}

// No request timeout, and the client's next request already buffered behind the DELETE: only the
// wait for the confirmation holds the connection then, and the DELETE is still answered.
TEST_F(HttpServerTest, APipelinedDeleteWithoutARequestTimeoutIsAnswered) {
  StartServer();
  factory_->HoldCloseConfirmations();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("DELETE", "", Sid(sid)) + c.Request("POST", Req(2, "ping"), Sid(sid)));
  for (int i = 0; i < 500 && factory_->close_reasons().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(factory_->close_reasons().size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server reads it all
  EXPECT_EQ(factory_->ConfirmHeldCloses(absl::OkStatus()), 1);
  EXPECT_EQ(c.ReadResponse().status, 200);
  EXPECT_EQ(c.ReadResponse().status, 404);  // the pipelined request, after the session's end
}

// The server stops while a DELETE waits: a confirmation that comes later must not reach the
// connection (its io_context is gone); under ASan a post to it is a use after free.
TEST_F(HttpServerTest, StopWhileADeleteWaitsForItsEnd) {
  StartServer();
  factory_->HoldCloseConfirmations();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("DELETE", "", Sid(sid)));
  for (int i = 0; i < 500 && factory_->close_reasons().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(factory_->close_reasons().size(), 1u);
  server_->Stop();
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(factory_->ConfirmHeldCloses(absl::OkStatus()), 1);  // runs it here, now
}

TEST_F(HttpServerTest, DeleteEndsAPendingPost) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  c.Send(c.Request("POST", Req(2, "ping", {{"hold", true}}), Sid(sid)));
  RawClient d(server_->port());
  d.Send(d.Request("DELETE", "", Sid(sid)));
  EXPECT_EQ(d.ReadResponse().status, 200);
  EXPECT_EQ(c.ReadResponse().status, 404);
  factory_->ReleaseHeld();  // the late answer is dropped
}

TEST_F(HttpServerTest, SlowHeadersAreCutOffByTheTimeout) {
  HttpServerOptions o;
  o.header_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  RawClient c(server_->port());
  auto start = std::chrono::steady_clock::now();
  c.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServerOptions o;
  o.keep_alive_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  RawClient c(server_->port());
  Init(c);
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(HttpServerTest, ExpectContinueIsHonoured) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  const std::string body = Req(2, "ping", {{"pad", std::string(3000, 'x')}});
  c.Send(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
      "Content-Type: application/json\r\nExpect: 100-continue\r\n" +
      Sid(sid) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  Response cont = c.ReadHead();
  EXPECT_EQ(cont.status, 100);
  c.Send(body);
  Response r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["id"], 2);
}

TEST_F(HttpServerTest, MalformedHttpGets400) {
  StartServer();
  RawClient c(server_->port());
  c.Send("GARBAGE\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 400);
  RawClient d(server_->port());
  d.Send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n");
  EXPECT_EQ(d.ReadResponse().status, 400);
}

TEST_F(HttpServerTest, ClientVanishingMidRequestIsHarmless) {
  StartServer();
  std::string sid;
  {
    RawClient c(server_->port());
    sid = Init(c);
    c.Send(c.Request("POST", Req(2, "ping", {{"hold", true}}), Sid(sid)));
    c.Send(c.Request("POST", "", ""));  // garbage after: ignored, the client is gone
  }
  {
    RawClient c(server_->port());
    c.Send(c.Request("POST", Req(3, "tools/call", {{"hold", true}, {"notify", true}}), Sid(sid)));
    Response head = c.ReadHead();  // the notification switches to SSE, then the client leaves
    EXPECT_EQ(head.status, 200);
  }
  factory_->ReleaseHeld();
  RawClient c(server_->port());
  Response r = c.Post(Req(4, "ping"), Sid(sid));
  EXPECT_EQ(r.status, 200);
  // The id of the abandoned request is free again once its answer was dropped.
  r = c.Post(Req(2, "ping"), Sid(sid));
  EXPECT_EQ(r.status, 200);
}

TEST_F(HttpServerTest, IdleSessionsAreClosed) {
  HttpServerOptions o;
  o.session_idle_timeout = std::chrono::milliseconds(50);
  StartServer(o);
  RawClient c(server_->port());
  std::string sid = Init(c);
  for (int i = 0; i < 400 && factory_->close_reasons().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(factory_->close_reasons(), std::vector<std::string>{"idle timeout"});
  EXPECT_EQ(c.Post(Req(2, "ping"), Sid(sid)).status, 404);
}

TEST_F(HttpServerTest, HealthzAndMetrics) {
  HttpServerOptions o;
  o.metrics = [] { return std::string("contextd_up 1\n"); };
  StartServer(o);
  RawClient c(server_->port());
  c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  Response r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  c.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  r = c.ReadResponse();
  EXPECT_EQ(r.status, 200);
  // The server's metrics first, then the listener's own.
  EXPECT_EQ(r.body.rfind("contextd_up 1\n# HELP contextd_http_", 0), 0u) << r.body;
  EXPECT_NE(r.body.find("\ncontextd_http_responses_total{route=\"healthz\",code=\"2xx\"} 1\n"),
            std::string::npos)
      << r.body;
  c.Send("GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 404);
}

TEST_F(HttpServerTest, MetricsAbsentIs404) {
  StartServer();
  RawClient c(server_->port());
  c.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.ReadResponse().status, 404);
}

TEST_F(HttpServerTest, ManyConcurrentClientsSyncEngine) {
  StartServer({}, /*async=*/false);
  RawClient c(server_->port());
  std::string sid = Init(c);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      RawClient k(server_->port());
      for (int i = 0; i < 50; ++i) {
        Response r = k.Post(Req(t * 1000 + i, "ping", {{"notify", i % 2 == 0}}), Sid(sid));
        if (r.status == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 400);
}

TEST_F(HttpServerTest, StopWithOpenStreamsAndPendingPosts) {
  StartServer();
  RawClient c(server_->port());
  std::string sid = Init(c);
  RawClient g(server_->port());
  g.Send(g.Request("GET", "", Sid(sid), "text/event-stream"));
  EXPECT_EQ(g.ReadHead().status, 200);
  RawClient p(server_->port());
  p.Send(p.Request("POST", Req(2, "ping", {{"hold", true}}), Sid(sid)));
  server_->Stop();
  EXPECT_EQ(factory_->close_reasons(), std::vector<std::string>{"server shutdown"});
  factory_->ReleaseHeld();  // a late answer after Stop is dropped
  EXPECT_TRUE(g.WaitClosed());
}

TEST_F(HttpServerTest, GetStreamSendsKeepAliveComments) {
  HttpServerOptions o;
  o.sse_keepalive_interval = std::chrono::milliseconds(20);
  StartServer(o);
  RawClient c(server_->port());
  std::string sid = Init(c);
  RawClient g(server_->port());
  g.Send(g.Request("GET", "", Sid(sid), "text/event-stream"));
  ASSERT_EQ(g.ReadHead().status, 200);
  EXPECT_EQ(g.ReadEvent(), ": keep-alive");
}

TEST_F(HttpServerTest, ConnectionsAboveTheLimitAreClosed) {
  HttpServerOptions o;
  o.max_connections = 1;
  StartServer(o);
  RawClient a(server_->port());
  Init(a);  // `a` is served and stays open
  RawClient b(server_->port());
  EXPECT_TRUE(b.WaitClosed());
}

TEST_F(HttpServerTest, RequestTimeoutAnswers504) {
  HttpServerOptions o;
  o.request_timeout = std::chrono::milliseconds(50);
  StartServer(o);
  RawClient c(server_->port());
  std::string sid = Init(c);
  Response r = c.Post(Req(2, "ping", {{"hold", true}}), Sid(sid));
  EXPECT_EQ(r.status, 504);
  factory_->ReleaseHeld();  // the late answer is dropped
  EXPECT_EQ(c.Post(Req(2, "ping"), Sid(sid)).status, 200);
}

TEST(HttpServerStartTest, BadAddressIsInvalidArgument) {
  HttpServerOptions o;
  o.listen_address = "not-an-ip";
  auto s = HttpServer::Start(o, std::make_shared<EchoSessionFactory>());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace contextd::transport
