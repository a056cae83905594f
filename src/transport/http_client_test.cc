// HttpClient against scripted servers on 127.0.0.1 port 0 (plain and TLS with certificates made in
// the test): requests and headers, streaming, pooling and the stale-connection retry, TLS
// verification, timeouts, cancellation and servers that misbehave. No sleeps: the test and the
// servers hand each other signals; every wait is bounded.
#include "transport/http_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "transport/testing/fake_mcp_http_server.h"
#include "transport/testing/http_script_server.h"

namespace contextd::transport {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

using testing::AnswerAll;
using testing::Chunk;
using testing::kWait;
using testing::Post;
using testing::Recorder;
using testing::ScriptServer;
using testing::ServerConn;
using testing::TempDir;

std::unique_ptr<HttpClient> MakeClient(HttpClientOptions options = {}) {
  auto client = HttpClient::Create(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

TEST(HttpClientTest, SendsTheRequestWithItsOwnHopByHopHeadersAndDeliversTheResponse) {
  std::promise<http::request<http::string_body>> seen;
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    seen.set_value(request);
    conn.Write(
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Request-Id: r1\r\n"
        "Content-Length: 11\r\n\r\n{\"ok\":true}");
  });
  auto client = MakeClient();
  Recorder rec;
  ClientRequest request = Post(server.url("/v1/messages?beta=true"), "{\"model\":\"m\"}");
  request.headers = {{"x-api-key", "sk-1"},
                     {"anthropic-version", "2023-06-01"},
                     {"Host", "evil.example"},
                     {"Content-Length", "999"},
                     {"Transfer-Encoding", "chunked"},
                     {"Connection", "close"},
                     {"Keep-Alive", "timeout=1"},
                     {"Upgrade", "h2c"},
                     {"TE", "trailers"},
                     {"Trailer", "x"},
                     {"Proxy-Authorization", "Basic x"},
                     {"X-Bad", "a\r\nInjected: 1"}};
  client->Start(request, rec.Callbacks());
  ASSERT_TRUE(rec.Done().ok()) << rec.Done();
  EXPECT_EQ(rec.status(), 201);
  EXPECT_EQ(rec.header("x-request-id"), "r1");
  EXPECT_EQ(rec.header("content-length"), "11");  // response headers are delivered as sent
  EXPECT_EQ(rec.body(), "{\"ok\":true}");
  EXPECT_EQ(rec.headers_calls(), 1);
  EXPECT_EQ(rec.done_calls(), 1);

  auto got = seen.get_future().get();
  EXPECT_EQ(got.method_string(), "POST");
  EXPECT_EQ(got.target(), "/v1/messages?beta=true");
  EXPECT_EQ(got[http::field::host], "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(got[http::field::content_length], "13");
  EXPECT_EQ(got[http::field::connection], "keep-alive");
  EXPECT_EQ(got.body(), "{\"model\":\"m\"}");
  EXPECT_EQ(got["x-api-key"], "sk-1");
  EXPECT_EQ(got["anthropic-version"], "2023-06-01");
  EXPECT_EQ(got.count(http::field::transfer_encoding), 0u);
  EXPECT_EQ(got.count(http::field::host), 1u);
  for (const char* dropped :
       {"keep-alive", "upgrade", "te", "trailer", "proxy-authorization", "x-bad", "injected"}) {
    EXPECT_EQ(got.count(dropped), 0u) << dropped;
  }
}

TEST(HttpClientTest, StreamsEachChunkBeforeTheServerSendsTheNext) {
  std::promise<void> first_delivered;
  std::promise<bool> second_sent;
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
        Chunk("event: message_start\ndata: {}\n\n"));
    // The second chunk is sent only once the client has handed the first one on.
    bool in_time = first_delivered.get_future().wait_for(kWait) == std::future_status::ready;
    conn.Write(Chunk("event: message_stop\ndata: {}\n\n") + "0\r\n\r\n");
    second_sent.set_value(in_time);
  });
  std::once_flag once;  // before the client: its worker may still run the hook on a failure
  auto client = MakeClient();
  Recorder rec;
  rec.OnData([&](std::string_view) { std::call_once(once, [&] { first_delivered.set_value(); }); });
  client->Start(Post(server.url()), rec.Callbacks());
  ASSERT_TRUE(rec.Done().ok()) << rec.Done();
  EXPECT_TRUE(second_sent.get_future().get());
  EXPECT_EQ(rec.header("content-type"), "text/event-stream");
  EXPECT_EQ(rec.body(), "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n");
}

TEST(HttpClientTest, ReusesAPooledConnection) {
  ScriptServer server(AnswerAll);
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i) {
    Recorder rec;
    client->Start(Post(server.url(), std::string(i + 1, 'x')), rec.Callbacks());
    ASSERT_TRUE(rec.Done().ok()) << rec.Done();
    EXPECT_EQ(rec.body(), "{\"echo\":" + std::to_string(i + 1) + "}");
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client->connections_opened(), 1u);
  EXPECT_EQ(client->connections_reused(), 2u);
}

TEST(HttpClientTest, IdleConnectionsPastTheirLifetimeAreNotReused) {
  ScriptServer server(AnswerAll);
  HttpClientOptions options;
  options.idle_lifetime = 0ms;
  auto client = MakeClient(options);
  for (int i = 0; i < 2; ++i) {
    Recorder rec;
    client->Start(Post(server.url()), rec.Callbacks());
    ASSERT_TRUE(rec.Done().ok()) << rec.Done();
  }
  EXPECT_EQ(client->connections_opened(), 2u);
  EXPECT_EQ(client->connections_reused(), 0u);
}

TEST(HttpClientTest, ConnectionCloseIsNotPooled) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
  });
  auto client = MakeClient();
  for (int i = 0; i < 2; ++i) {
    Recorder rec;
    client->Start(Post(server.url()), rec.Callbacks());
    ASSERT_TRUE(rec.Done().ok()) << rec.Done();
    EXPECT_EQ(rec.body(), "ok");
  }
  EXPECT_EQ(client->connections_opened(), 2u);
}

TEST(HttpClientTest, APooledConnectionClosedByTheServerIsReplacedOnce) {
  // The first connection answers one request, then closes when the second arrives, without a
  // byte of answer: the client sends it again on a fresh connection.
  ScriptServer server([](ServerConn& conn) {
    if (conn.index() > 0) return AnswerAll(conn);
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
    if (conn.Read(request)) conn.Close();
  });
  auto client = MakeClient();
  Recorder first;
  client->Start(Post(server.url()), first.Callbacks());
  ASSERT_TRUE(first.Done().ok()) << first.Done();
  Recorder second;
  client->Start(Post(server.url(), "abc"), second.Callbacks());
  ASSERT_TRUE(second.Done().ok()) << second.Done();
  EXPECT_EQ(second.body(), "{\"echo\":3}");
  EXPECT_EQ(second.headers_calls(), 1);
  EXPECT_EQ(client->stale_retries(), 1u);
  EXPECT_EQ(client->connections_reused(), 1u);
  EXPECT_EQ(client->connections_opened(), 2u);
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpClientTest, AFreshConnectionClosedBeforeTheResponseIsNotRetried) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (conn.Read(request)) conn.Close();
  });
  auto client = MakeClient();
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("127.0.0.1:" + std::to_string(server.port())), std::string::npos)
      << status;
  EXPECT_EQ(rec.headers_calls(), 0);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client->stale_retries(), 0u);
}

class HttpClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir_.path(), "ip", "IP:127.0.0.1").ok());
    ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir_.path(), "other", "IP:127.0.0.1").ok());
    ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir_.path(), "name", "DNS:other.test").ok());
  }
  std::string File(const std::string& name) const { return dir_.path() + "/" + name; }
  TempDir dir_;
};

TEST_F(HttpClientTlsTest, VerifiesTheServerAgainstTheCaFileAndPoolsTlsConnections) {
  ScriptServer server(AnswerAll, File("ip.crt"), File("ip.key"));
  HttpClientOptions options;
  options.ca_file = File("ip.crt");
  auto client = MakeClient(options);
  for (int i = 0; i < 2; ++i) {
    Recorder rec;
    client->Start(Post(server.url(), "abcd"), rec.Callbacks());
    ASSERT_TRUE(rec.Done().ok()) << rec.Done();
    EXPECT_EQ(rec.body(), "{\"echo\":4}");
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client->connections_reused(), 1u);
}

TEST_F(HttpClientTlsTest, AnUntrustedCertificateIsUnavailableNamingTheHost) {
  ScriptServer server(AnswerAll, File("ip.crt"), File("ip.key"));
  HttpClientOptions options;
  options.ca_file = File("other.crt");  // a different CA with the same name
  auto client = MakeClient(options);
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("TLS handshake with 127.0.0.1:" + std::to_string(server.port())),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("certificate verify failed"), std::string::npos) << status;
  EXPECT_EQ(client->connections_opened(), 0u);
}

TEST_F(HttpClientTlsTest, ACertificateForAnotherHostIsUnavailable) {
  ScriptServer server(AnswerAll, File("name.crt"), File("name.key"));
  HttpClientOptions options;
  options.ca_file = File("name.crt");  // trusted, but it names other.test, not 127.0.0.1
  auto client = MakeClient(options);
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("certificate verify failed"), std::string::npos) << status;
}

TEST(HttpClientTest, AnUnreadableCaFileIsInvalidArgument) {
  HttpClientOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  auto client = HttpClient::Create(options);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpClientTest, BadUrlsAndMethodsAreInvalidArgument) {
  auto client = MakeClient();
  for (const auto& [method, url] :
       std::vector<std::pair<std::string, std::string>>{{"POST", "ftp://example.test/"},
                                                        {"POST", "https://"},
                                                        {"POST", "http://example.test/a b"},
                                                        {"POST", "http://example.test/a\r\nX: 1"},
                                                        {"PO ST", "http://example.test/"},
                                                        {"", "http://example.test/"}}) {
    Recorder rec;
    ClientRequest request = Post(url);
    request.method = method;
    client->Start(request, rec.Callbacks());
    EXPECT_EQ(rec.Done().code(), absl::StatusCode::kInvalidArgument) << method << " " << url;
  }
}

TEST(HttpClientTest, ConnectionRefusedIsUnavailableNamingHostAndPort) {
  uint16_t port;
  {
    // A port that was just free: nothing listens on it.
    net::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }
  auto client = MakeClient();
  Recorder rec;
  client->Start(Post("http://127.0.0.1:" + std::to_string(port) + "/"), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << status;
}

TEST(HttpClientTest, ResponseTimeout) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (conn.Read(request)) conn.WaitForClientClose();
  });
  HttpClientOptions options;
  options.response_timeout = 200ms;
  auto client = MakeClient(options);
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("no response headers"), std::string::npos) << status;
  EXPECT_EQ(rec.headers_calls(), 0);
}

TEST(HttpClientTest, ReadTimeoutBetweenBodyReads) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk("ping"));
    conn.WaitForClientClose();
  });
  HttpClientOptions options;
  options.read_timeout = 200ms;
  auto client = MakeClient(options);
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("no response data"), std::string::npos) << status;
  EXPECT_EQ(rec.status(), 200);
  EXPECT_EQ(rec.body(), "ping");
}

TEST(HttpClientTest, CancelMidStreamClosesTheConnection) {
  std::promise<bool> client_closed;
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk("event 1"));
    client_closed.set_value(conn.WaitForClientClose());
  });
  auto client = MakeClient();
  Recorder rec;
  auto call = client->Start(Post(server.url()), rec.Callbacks());
  ASSERT_TRUE(rec.WaitForBody(7));
  call->Cancel();  // from the test's thread while the worker waits for more
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  auto closed = client_closed.get_future();
  ASSERT_EQ(closed.wait_for(kWait), std::future_status::ready);
  EXPECT_TRUE(closed.get());
  EXPECT_EQ(rec.done_calls(), 1);
  call->Cancel();  // idempotent, also after the end
}

TEST(HttpClientTest, CancelFromTheDataCallback) {
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk("event 1"));
    conn.WaitForClientClose();
  });
  std::shared_ptr<ClientCall> call;  // before the client, which joins the worker using them
  std::mutex call_mu;
  auto client = MakeClient();
  Recorder rec;
  rec.OnData([&](std::string_view) {
    std::lock_guard<std::mutex> lock(call_mu);
    if (call) call->Cancel();
  });
  {
    std::lock_guard<std::mutex> lock(call_mu);
    call = client->Start(Post(server.url()), rec.Callbacks());
  }
  EXPECT_EQ(rec.Done().code(), absl::StatusCode::kCancelled);
}

TEST(HttpClientTest, DestroyingTheClientCancelsRequestsInFlight) {
  std::promise<void> request_seen;
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    request_seen.set_value();
    conn.WaitForClientClose();
  });
  auto client = MakeClient();
  Recorder rec;
  auto call = client->Start(Post(server.url()), rec.Callbacks());
  ASSERT_EQ(request_seen.get_future().wait_for(kWait), std::future_status::ready);
  client.reset();
  EXPECT_EQ(rec.Done().code(), absl::StatusCode::kCancelled);
  call->Cancel();  // the call outlives its client
}

TEST(HttpClientTest, AConnectionDroppedMidBodyIsUnavailableWithTheByteCount) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(40, 'a'));
    conn.Close();
  });
  auto client = MakeClient();
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(status.message(), "connection to 127.0.0.1:" + std::to_string(server.port()) +
                                  " closed after 40 bytes of the response");
  EXPECT_EQ(rec.body(), std::string(40, 'a'));
}

TEST(HttpClientTest, AnOversizedHeaderBlockIsRefused) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    std::string head = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 100; ++i) {
      head += "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'f') + "\r\n";
    }
    conn.Write(head + "Content-Length: 0\r\n\r\n");
    conn.WaitForClientClose();
  });
  auto client = MakeClient();
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  absl::Status status = rec.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("exceed 65536 bytes"), std::string::npos) << status;
  EXPECT_EQ(rec.headers_calls(), 0);
}

TEST(HttpClientTest, InterimResponsesAreSkippedAndBodiesToEofDelivered) {
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil the end");
    conn.Close();
  });
  auto client = MakeClient();
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  ASSERT_TRUE(rec.Done().ok()) << rec.Done();
  EXPECT_EQ(rec.status(), 200);
  EXPECT_EQ(rec.body(), "until the end");
  EXPECT_EQ(rec.headers_calls(), 1);
}

TEST(HttpClientTest, ConcurrentRequests) {
  ScriptServer server(AnswerAll);
  auto client = MakeClient();
  std::vector<std::unique_ptr<Recorder>> recs;
  for (int i = 0; i < 6; ++i) {
    recs.push_back(std::make_unique<Recorder>());
    client->Start(Post(server.url(), std::string(i, 'y')), recs.back()->Callbacks());
  }
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(recs[i]->Done().ok()) << recs[i]->Done();
    EXPECT_EQ(recs[i]->body(), "{\"echo\":" + std::to_string(i) + "}");
  }
}

TEST(HttpClientTest, ZeroTimeoutsSetNoDeadline) {
  // The answer waits for the test's signals: with a zero timeout meaning "at once", the call
  // would end DeadlineExceeded before either.
  std::promise<void> request_seen;
  std::promise<void> send_headers;
  std::promise<void> send_rest;
  ScriptServer server([&](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    request_seen.set_value();
    if (send_headers.get_future().wait_for(kWait) != std::future_status::ready) return;
    conn.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk("a"));
    if (send_rest.get_future().wait_for(kWait) != std::future_status::ready) return;
    conn.Write(Chunk("b") + "0\r\n\r\n");
  });
  HttpClientOptions options;
  options.connect_timeout = 0ms;
  options.response_timeout = 0ms;
  options.read_timeout = 0ms;
  auto client = MakeClient(options);
  Recorder rec;
  client->Start(Post(server.url()), rec.Callbacks());
  ASSERT_EQ(request_seen.get_future().wait_for(kWait), std::future_status::ready);
  send_headers.set_value();
  ASSERT_TRUE(rec.WaitForBody(1));
  send_rest.set_value();
  ASSERT_TRUE(rec.Done().ok()) << rec.Done();
  EXPECT_EQ(rec.body(), "ab");
}

TEST(HttpClientTest, ARequestNotSafeToRepeatIsNotSentAgainOnAStalePooledConnection) {
  // As APooledConnectionClosedByTheServerIsReplacedOnce, but the request (an MCP tools/call,
  // say) must not be sent twice: the server read it before it closed.
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
    if (conn.Read(request)) conn.Close();
  });
  auto client = MakeClient();
  std::vector<bool> connected;  // written by the worker, read after on_done
  Recorder first;
  ClientCallbacks callbacks = first.Callbacks();
  callbacks.on_connected = [&](bool reused) { connected.push_back(reused); };
  client->Start(Post(server.url()), callbacks);
  ASSERT_TRUE(first.Done().ok()) << first.Done();
  Recorder second;
  callbacks = second.Callbacks();
  callbacks.on_connected = [&](bool reused) { connected.push_back(reused); };
  ClientRequest request = Post(server.url(), "abc");
  request.retry_unanswered = false;
  client->Start(std::move(request), callbacks);
  absl::Status status = second.Done();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("closed before the response"), std::string::npos) << status;
  EXPECT_EQ(connected, (std::vector<bool>{false, true}));
  EXPECT_EQ(client->stale_retries(), 0u);
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpClientTest, ARequestNotCompletelyWrittenIsSentAgainEvenIfNotSafeToRepeat) {
  // The server takes the second request's headers and closes without reading its body (a reset,
  // as data was left unread): the write fails, so the server cannot have the request.
  static constexpr size_t kBig = 32u << 20;  // beyond what the socket buffers hold
  ScriptServer server([](ServerConn& conn) {
    http::request<http::string_body> request;
    if (conn.index() > 0) {
      beast::flat_buffer buffer;
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBig);
      beast::error_code ec;
      http::read(conn.socket(), buffer, parser, ec);
      if (!ec) conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody");
      return;
    }
    if (!conn.Read(request)) return;
    conn.Write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst");
    char byte;
    beast::error_code ec;
    conn.socket().read_some(net::buffer(&byte, 1), ec);
    conn.socket().set_option(net::socket_base::linger(true, 0), ec);
    conn.Close();
  });
  auto client = MakeClient();
  Recorder first;
  client->Start(Post(server.url()), first.Callbacks());
  ASSERT_TRUE(first.Done().ok()) << first.Done();
  Recorder second;
  ClientRequest request = Post(server.url(), std::string(kBig, 'z'));
  request.retry_unanswered = false;
  client->Start(std::move(request), second.Callbacks());
  ASSERT_TRUE(second.Done().ok()) << second.Done();
  EXPECT_EQ(second.body(), "body");
  EXPECT_EQ(client->stale_retries(), 1u);
  EXPECT_EQ(server.connections(), 2);
}

}  // namespace
}  // namespace contextd::transport
