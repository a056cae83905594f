// Test-only helpers for HttpClient's tests: ScriptServer, a server on 127.0.0.1 port 0 (plain or
// TLS) whose every connection runs a scripted handler on its own thread (ServerConn), and
// Recorder, which collects what a call reports. Every wait is bounded. Thread-safe as noted.
#pragma once

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "transport/http_client.h"

namespace contextd::transport::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

// The bound of every wait; a passing test never reaches it.
constexpr auto kWait = std::chrono::seconds(10);

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

inline std::string Chunk(const std::string& data) {
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

inline ClientRequest Post(const std::string& url, std::string body = "{}") {
  ClientRequest r;
  r.method = "POST";
  r.url = url;
  r.headers = {{"content-type", "application/json"}};
  r.body = std::move(body);
  return r;
}

// Answers every request on the connection with a small keep-alive JSON response.
inline void AnswerAll(ServerConn& conn) {
  http::request<http::string_body> request;
  while (conn.Read(request)) {
    std::string body = "{\"echo\":" + std::to_string(request.body().size()) + "}";
    if (!conn.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body)) {
      return;
    }
  }
}

// A fresh temporary directory, removed with its contents at destruction.
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

}  // namespace contextd::transport::testing
