// HttpClient against scripted servers on 127.0.0.1 port 0 (plain and TLS with certificates made in
// the test): requests and headers, streaming, pooling and the stale-connection retry, TLS
// verification, timeouts, cancellation and servers that misbehave. No sleeps: the test and the
// servers hand each other signals; every wait is bounded.
#include "transport/http_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "transport/testing/fake_mcp_http_server.h"

namespace contextd::transport {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // bound of every wait; a passing test never reaches it

// One accepted connection of a ScriptServer, served by a handler on its own thread.
class ServerConn {
 public:
  ServerConn(tcp::socket socket, ssl::context* tls, int index) : index_(index) {
    if (tls != nullptr) {
      tls_.emplace(std::move(socket), *tls);
    } else {
      plain_.emplace(std::move(socket));
    }
  }
  // Which connection of the server this is (0, 1, ...).
  int index() const { return index_; }
  bool Handshake() {
    if (!tls_) return true;
    beast::error_code ec;
    tls_->handshake(ssl::stream_base::server, ec);
    return !ec;
  }
  // Reads the next request; false when the client closed the connection or sent garbage.
  bool Read(http::request<http::string_body>& request) {
    request = {};
    beast::error_code ec;
    if (tls_) {
      http::read(*tls_, buffer_, request, ec);
    } else {
      http::read(*plain_, buffer_, request, ec);
    }
    return !ec;
  }
  bool Write(const std::string& bytes) {
    beast::error_code ec;
    if (tls_) {
      net::write(*tls_, net::buffer(bytes), ec);
    } else {
      net::write(*plain_, net::buffer(bytes), ec);
    }
    return !ec;
  }
  // Blocks until the client closes the connection (or the server stops); true on the client's
  // close.
  bool WaitForClientClose() {
    char byte;
    beast::error_code ec;
    for (;;) {
      size_t n = tls_ ? tls_->read_some(net::buffer(&byte, 1), ec)
                      : plain_->read_some(net::buffer(&byte, 1), ec);
      if (ec) return true;
      if (n == 0) return true;
    }
  }
  void Close() {
    beast::error_code ec;
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }

 private:
  const int index_;
  std::optional<tcp::socket> plain_;
  std::optional<ssl::stream<tcp::socket>> tls_;
  beast::flat_buffer buffer_;
};

// A server on 127.0.0.1 port 0 whose connections run `handler`. Stop (or the destructor) shuts
// every socket down and joins the threads: a handler blocked in a read returns.
class ScriptServer {
 public:
  using Handler = std::function<void(ServerConn&)>;

  explicit ScriptServer(Handler handler, const std::string& cert = "", const std::string& key = "")
      : handler_(std::move(handler)) {
    if (!cert.empty()) {
      tls_.emplace(ssl::context::tls_server);
      tls_->use_certificate_chain_file(cert);
      tls_->use_private_key_file(key, ssl::context::pem);
    }
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~ScriptServer() { Stop(); }

  uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/v1/messages") const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
  }
  int connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_;
  }
  void Stop() {
    std::list<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    accept_thread_.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  void AcceptLoop() {
    for (;;) {
      beast::error_code ec;
      tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (ec) continue;
      const int fd = socket.native_handle();
      fds_.insert(fd);
      const int index = accepted_++;
      threads_.emplace_back([this, s = std::move(socket), index, fd]() mutable {
        ServerConn conn(std::move(s), tls_ ? &*tls_ : nullptr, index);
        if (conn.Handshake()) handler_(conn);
        std::lock_guard<std::mutex> l(mu_);
        fds_.erase(fd);
      });
    }
  }

  Handler handler_;
  net::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  std::optional<ssl::context> tls_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  bool stopping_ = false;
  int accepted_ = 0;
  std::set<int> fds_;
  std::list<std::thread> threads_;
};

std::string Chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// What a call reported. The callbacks share the state, so that a test that fails early (and
// destroys the recorder before the client) does not leave a worker writing into freed memory.
class Recorder {
 public:
  ClientCallbacks Callbacks() {
    ClientCallbacks cb;
    cb.on_headers = [s = s_](int status, HttpHeaders headers) {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->headers_calls;
      s->status = status;
      s->headers = std::move(headers);
      s->cv.notify_all();
    };
    cb.on_data = [s = s_](std::string_view chunk) {
      std::function<void(std::string_view)> hook;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->body.append(chunk);
        hook = s->on_data_hook;
      }
      s->cv.notify_all();
      if (hook) hook(chunk);
    };
    cb.on_done = [s = s_](absl::Status status) {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->done_calls;
      s->done = std::move(status);
      s->cv.notify_all();
    };
    return cb;
  }
  // Runs on the worker thread after each piece of body is recorded.
  void OnData(std::function<void(std::string_view)> hook) {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->on_data_hook = std::move(hook);
  }
  // Waits (bounded) for on_done; its status, or an Internal "timeout" status.
  absl::Status Done() {
    std::unique_lock<std::mutex> lock(s_->mu);
    if (!s_->cv.wait_for(lock, kWait, [&] { return s_->done.has_value(); })) {
      return absl::InternalError("test timeout: no on_done");
    }
    return *s_->done;
  }
  // Waits (bounded) until the body holds `n` bytes.
  bool WaitForBody(size_t n) {
    std::unique_lock<std::mutex> lock(s_->mu);
    return s_->cv.wait_for(lock, kWait, [&] { return s_->body.size() >= n; });
  }
  int status() {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->status;
  }
  std::string header(const std::string& name) {
    std::lock_guard<std::mutex> lock(s_->mu);
    for (const auto& [k, v] : s_->headers) {
      if (beast::iequals(k, name)) return v;
    }
    return "<absent>";
  }
  std::string body() {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->body;
  }
  int headers_calls() {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->headers_calls;
  }
  int done_calls() {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->done_calls;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int headers_calls = 0;
    int status = 0;
    HttpHeaders headers;
    std::string body;
    int done_calls = 0;
    std::optional<absl::Status> done;
    std::function<void(std::string_view)> on_data_hook;
  };
  std::shared_ptr<State> s_ = std::make_shared<State>();
};

std::unique_ptr<HttpClient> MakeClient(HttpClientOptions options = {}) {
  auto client = HttpClient::Create(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

ClientRequest Post(const std::string& url, std::string body = "{}") {
  ClientRequest r;
  r.method = "POST";
  r.url = url;
  r.headers = {{"content-type", "application/json"}};
  r.body = std::move(body);
  return r;
}

// Answers every request on the connection with a small keep-alive JSON response.
void AnswerAll(ServerConn& conn) {
  http::request<http::string_body> request;
  while (conn.Read(request)) {
    std::string body = "{\"echo\":" + std::to_string(request.body().size()) + "}";
    if (!conn.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body)) {
      return;
    }
  }
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ctxd_client_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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

}  // namespace
}  // namespace contextd::transport
