#include "transport/testing/fake_mcp_http_server.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <functional>
#include <optional>

#include "nlohmann/json.hpp"

namespace contextd::transport::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;
using Json = nlohmann::json;

}  // namespace

absl::Status WriteSelfSignedCertificate(const std::string& dir, const std::string& stem,
                                        const std::string& san) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return absl::InternalError("EC key generation failed");
  X509* cert = X509_new();
  bool ok = cert != nullptr;
  static std::atomic<long> serial{1};
  ok = ok && X509_set_version(cert, 2) == 1;
  ok = ok && ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++) == 1;
  ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nullptr;
  ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600) != nullptr;
  ok = ok && X509_set_pubkey(cert, key) == 1;
  if (ok) {
    X509_NAME* name = X509_get_subject_name(cert);
    ok = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>("contextd test"), -1, -1,
                                    0) == 1 &&
         X509_set_issuer_name(cert, name) == 1;
  }
  if (ok) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san.c_str());
    ok = ext != nullptr && X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
  }
  ok = ok && X509_sign(cert, key, EVP_sha256()) > 0;
  if (ok) {
    FILE* crt = std::fopen((dir + "/" + stem + ".crt").c_str(), "w");
    FILE* pem = std::fopen((dir + "/" + stem + ".key").c_str(), "w");
    ok = crt != nullptr && pem != nullptr && PEM_write_X509(crt, cert) == 1 &&
         PEM_write_PrivateKey(pem, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (crt != nullptr) std::fclose(crt);
    if (pem != nullptr) std::fclose(pem);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok ? absl::OkStatus() : absl::InternalError("making the test certificate failed");
}

struct FakeMcpHttpServer::Impl {
  struct Conn {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<ssl::context> tls;
  std::thread accept_thread;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::deque<GetAnswer> gets;
  std::vector<std::string> last_event_ids;
  int posts = 0;
  std::optional<std::string> post_sse_events;  // set: answer POSTs with SSE
  std::set<int> fds;
  std::list<Conn> conns;

  void AcceptLoop() {
    for (;;) {
      beast::error_code ec;
      tcp::socket socket(ioc);
      acceptor.accept(socket, ec);
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      if (ec) continue;
      int fd = socket.native_handle();
      fds.insert(fd);
      auto done = std::make_shared<std::atomic<bool>>(false);
      conns.push_back(Conn{std::thread([this, s = std::move(socket), fd, done]() mutable {
                             Handle(std::move(s));
                             {
                               std::lock_guard<std::mutex> l(mu);
                               fds.erase(fd);
                             }
                             done->store(true);
                           }),
                           done});
    }
  }

  void Handle(tcp::socket socket) {
    if (!tls) {
      Serve(socket);
      return;
    }
    ssl::stream<tcp::socket> stream(std::move(socket), *tls);
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (!ec) Serve(stream);
  }

  template <class Stream>
  void Serve(Stream& stream) {
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    beast::error_code ec;
    http::read(stream, buffer, request, ec);
    if (ec) return;
    auto write = [&](const std::string& text) { net::write(stream, net::buffer(text), ec); };
    if (request.method() == http::verb::get) {
      GetAnswer answer;
      answer.status = 405;
      {
        std::lock_guard<std::mutex> lock(mu);
        last_event_ids.emplace_back(request["Last-Event-ID"]);
        if (!gets.empty()) {
          answer = gets.front();
          gets.pop_front();
        }
      }
      cv.notify_all();
      if (answer.status != 200) {
        write("HTTP/1.1 " + std::to_string(answer.status) +
              " Scripted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
      }
      write(
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
          "Connection: close\r\n\r\n" +
          answer.sse);
      if (answer.hold) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return stopping; });
      }
      return;
    }
    Json message = Json::parse(request.body(), nullptr, false);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++posts;
    }
    cv.notify_all();
    if (!message.is_object() || !message.contains("id")) {
      write("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    // The answer's text is put together as a string: no JSON value is built on this thread
    // but the parsed request (clang 14's LeakSanitizer intermittently reported the object of a
    // joined connection thread's `Json::object()` result as leaked).
    std::string result = "{}";
    if (message.value("method", "") == "initialize") {
      result = R"({"protocolVersion":"2025-11-25","capabilities":{},)"
               R"("serverInfo":{"name":"fake","version":"1"}})";
    }
    std::string body =
        R"({"jsonrpc":"2.0","id":)" + message["id"].dump() + R"(,"result":)" + result + "}";
    std::optional<std::string> sse_events;
    {
      std::lock_guard<std::mutex> lock(mu);
      sse_events = post_sse_events;
    }
    if (sse_events && message.value("method", "") != "initialize") {
      write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" +
            *sse_events + "data: " + body + "\n\n");
      return;
    }
    write(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: fake-session\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }
};

absl::StatusOr<std::unique_ptr<FakeMcpHttpServer>> FakeMcpHttpServer::Start(Options options) {
  auto impl = std::make_unique<Impl>();
  beast::error_code ec;
  bool https = !options.cert_file.empty() && !options.key_file.empty();
  if (https) {
    impl->tls.emplace(ssl::context::tls_server);
    impl->tls->use_certificate_chain_file(options.cert_file, ec);
    if (!ec) impl->tls->use_private_key_file(options.key_file, ssl::context::pem, ec);
    if (ec) return absl::InternalError("fake server: cannot load the certificate: " + ec.message());
  }
  tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return absl::InternalError("fake server: cannot listen: " + ec.message());
  unsigned short port = impl->acceptor.local_endpoint().port();
  Impl* raw = impl.get();
  impl->accept_thread = std::thread([raw] { raw->AcceptLoop(); });
  std::unique_ptr<FakeMcpHttpServer> server(new FakeMcpHttpServer(std::move(impl)));
  server->url_ =
      std::string(https ? "https" : "http") + "://127.0.0.1:" + std::to_string(port) + "/mcp";
  return server;
}

FakeMcpHttpServer::FakeMcpHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeMcpHttpServer::~FakeMcpHttpServer() { Stop(); }

void FakeMcpHttpServer::AnswerPostsWithSse(std::string events) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->post_sse_events = std::move(events);
}

void FakeMcpHttpServer::QueueGet(GetAnswer answer) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->gets.push_back(std::move(answer));
}

std::vector<std::string> FakeMcpHttpServer::get_last_event_ids() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_event_ids;
}

bool FakeMcpHttpServer::WaitForGets(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] { return impl_->last_event_ids.size() >= n; });
}

bool FakeMcpHttpServer::WaitForPosts(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] { return impl_->posts >= n; });
}

int FakeMcpHttpServer::posts() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->posts;
}

void FakeMcpHttpServer::Stop() {
  std::list<Impl::Conn> conns;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    // shutdown() wakes the blocking accept and every blocking read on another thread.
    ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
    for (int fd : impl_->fds) ::shutdown(fd, SHUT_RDWR);
  }
  impl_->cv.notify_all();
  impl_->accept_thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    conns.swap(impl_->conns);
  }
  for (auto& c : conns) c.thread.join();
}

}  // namespace contextd::transport::testing
