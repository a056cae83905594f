#include "transport/http_client.h"

#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <exception>
#include <limits>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "base/internal_errors.h"
#include "base/str_cat.h"
#include "transport/http_url.h"
#include "transport/internal/tls_client.h"

namespace contextd::transport {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

constexpr uint32_t kMaxHeaderBytes = 64u << 10;
constexpr size_t kReadChunkBytes = 16u << 10;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// RFC 9110 token characters (methods and header names).
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) == 0 &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Headers the client owns (framing, connection management) or that concern only the hop to a
// proxy; a caller's copies are dropped.
bool IsHopByHop(std::string_view name) {
  const std::string n = Lower(name);
  return n == "host" || n == "content-length" || n == "transfer-encoding" || n == "connection" ||
         n == "keep-alive" || n == "upgrade" || n == "te" || n == "trailer" ||
         n.rfind("proxy-", 0) == 0;
}

std::string Ms(std::chrono::milliseconds d) { return base::StrCat(d.count(), " ms"); }

// The peer closed the connection (rather than sending something malformed).
bool IsClosed(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::broken_pipe || ec == ssl::error::stream_truncated;
}

}  // namespace

struct HttpClient::Tls {
  ssl::context context{ssl::context::tls_client};
};

// One plain or TLS connection with its own io_context, which only the worker holding the
// connection runs. Other threads reach it only by posting to that io_context (ClientCall::Cancel).
struct ClientCall::Connection {
  explicit Connection(ssl::context* tls_context) {
    if (tls_context != nullptr) {
      tls.emplace(ioc, *tls_context);
    } else {
      plain.emplace(ioc);
    }
  }

  tcp::socket& socket() { return tls ? tls->next_layer() : *plain; }
  // Runs `f` with the stream to read and write (the TLS stream or the plain socket).
  template <class F>
  void Use(F&& f) {
    if (tls) {
      f(*tls);
    } else {
      f(*plain);
    }
  }

  // Makes the operations in flight complete with an error. On the io_context's thread.
  void Abort() {
    resolver.cancel();
    beast::error_code ignored;
    socket().close(ignored);
  }

  // A deadline for the next operations: when it passes, timed_out is set and Abort runs. A
  // timeout of zero (or less) sets none.
  void Arm(std::chrono::milliseconds timeout) {
    ++timer_gen;
    timed_out = false;
    if (timeout <= std::chrono::milliseconds::zero()) {
      timer.cancel();
      return;
    }
    timer.expires_after(timeout);
    timer.async_wait([this, gen = timer_gen](const beast::error_code& ec) {
      // A deadline that passed just as its operation completed must not abort the next one.
      if (ec || gen != timer_gen) return;
      timed_out = true;
      Abort();
    });
  }
  void Disarm() {
    ++timer_gen;
    timer.cancel();
  }

  // Runs the io_context until `done` is set by a completion handler.
  void RunUntil(const bool& done) {
    ioc.restart();
    while (!done && ioc.run_one() > 0) {
    }
  }

  // An idle connection whose peer closed it (or sent something unasked) is readable.
  bool LooksAlive() {
    pollfd p{socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  net::io_context ioc;  // first: destroyed after everything that uses it
  tcp::resolver resolver{ioc};
  net::steady_timer timer{ioc};
  std::optional<tcp::socket> plain;
  std::optional<ssl::stream<tcp::socket>> tls;
  uint64_t timer_gen = 0;
  bool timed_out = false;
};

// A checked request, serialized once (and again, unchanged, for a retry).
struct HttpClient::Prepared {
  HttpUrl url;
  std::string where;  // "host:port" for messages
  std::string key;    // the pool's key: "scheme://host:port"
  bool head = false;
  bool retry_unanswered = true;
  http::request<http::string_body> message;
};

void ClientCall::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (connection_) {
    // The raw pointer is safe: the task lives in the connection's own io_context.
    Connection* c = connection_.get();
    net::post(c->ioc, [c] { c->Abort(); });
  }
}

bool ClientCall::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

absl::StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(HttpClientOptions options) {
  auto tls = std::make_unique<Tls>();
  absl::Status configured = internal::ConfigureTlsClientContext(tls->context, options.ca_file);
  if (!configured.ok()) return configured;
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(options), std::move(tls)));
}

HttpClient::HttpClient(HttpClientOptions options, std::unique_ptr<Tls> tls)
    : options_(std::move(options)), tls_(std::move(tls)) {}

HttpClient::~HttpClient() {
  std::list<Worker> workers;
  std::vector<std::shared_ptr<ClientCall>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    workers.swap(workers_);
    calls.assign(in_flight_.begin(), in_flight_.end());
  }
  // Calls in flight end Cancelled; those not yet taken by a worker end at once when it does.
  for (auto& call : calls) call->Cancel();
  task_cv_.notify_all();
  for (auto& w : workers) w.thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
}

namespace {

// Moves the body of `request` into `m`.
absl::Status Prepare(ClientRequest& request, HttpUrl url, http::request<http::string_body>& m) {
  for (char c : request.url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("url contains a space or a control character");
    }
  }
  if (!IsToken(request.method)) {
    return absl::InvalidArgumentError(base::StrCat("bad HTTP method: '", request.method, "'"));
  }
  m.version(11);
  m.method_string(request.method);
  m.target(url.target);
  for (const auto& [name, value] : request.headers) {
    if (!IsToken(name) || value.find_first_of("\r\n") != std::string::npos || IsHopByHop(name)) {
      continue;
    }
    m.insert(name, value);
  }
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  const bool default_port = url.port == (url.tls ? "443" : "80");
  m.set(http::field::host, default_port ? host : host + ":" + url.port);
  const size_t length = request.body.size();
  m.body() = std::move(request.body);
  if (length > 0 || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    m.set(http::field::content_length, std::to_string(length));
  }
  m.set(http::field::connection, "keep-alive");
  return absl::OkStatus();
}

}  // namespace

std::shared_ptr<ClientCall> HttpClient::Start(ClientRequest request, ClientCallbacks callbacks) {
  auto call = std::make_shared<ClientCall>();
  auto cb = std::make_shared<ClientCallbacks>(std::move(callbacks));
  auto prepared = std::make_shared<Prepared>();
  absl::StatusOr<HttpUrl> url = ParseHttpUrl(request.url);
  absl::Status ok = url.status();
  if (ok.ok()) {
    prepared->url = *url;
    ok = Prepare(request, std::move(url).value(), prepared->message);
  }
  if (!ok.ok()) {
    if (cb->on_done) cb->on_done(ok);
    return call;
  }
  const HttpUrl& u = prepared->url;
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  prepared->where = base::StrCat(host, ":", u.port);
  prepared->key = base::StrCat(u.tls ? "https://" : "http://", prepared->where);
  prepared->head = request.method == "HEAD";
  prepared->retry_unanswered = request.retry_unanswered;

  absl::Status failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Reap workers whose loop ended, so that the list stays short.
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    tasks_.push_back(Task{call, cb, prepared});
    in_flight_.insert(call);
    if (idle_workers_ > static_cast<int>(tasks_.size()) - 1) {
      task_cv_.notify_one();
    } else {
      auto done = std::make_shared<std::atomic<bool>>(false);
      try {
        workers_.push_back(Worker{std::thread([this, done] {
                                    base::RunLoopCatching("http_client", [&] { WorkerLoop(done); });
                                  }),
                                  done});
      } catch (const std::system_error& e) {
        tasks_.pop_back();
        in_flight_.erase(call);
        failed = absl::ResourceExhaustedError(
            base::StrCat("cannot start a thread for the request: ", e.what()));
      }
    }
  }
  if (!failed.ok() && cb->on_done) cb->on_done(failed);
  return call;
}

void HttpClient::WorkerLoop(const std::shared_ptr<std::atomic<bool>>& done) {
  constexpr int kMaxIdleWorkers = 8;
  constexpr auto kIdleLifetime = std::chrono::seconds(60);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (tasks_.empty()) {
      if (stopping_ || idle_workers_ >= kMaxIdleWorkers) break;
      ++idle_workers_;
      bool woke =
          task_cv_.wait_for(lock, kIdleLifetime, [this] { return stopping_ || !tasks_.empty(); });
      --idle_workers_;
      if (!woke || tasks_.empty()) break;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    absl::Status status;
    try {
      status = Run(*task.call, *task.prepared, *task.callbacks);
    } catch (const std::exception& e) {
      status = absl::InternalError(
          base::StrCat("request to ", task.prepared->where, " failed: ", e.what()));
    }
    if (task.callbacks->on_done) task.callbacks->on_done(status);
    lock.lock();
    in_flight_.erase(task.call);
  }
  done->store(true);
}

bool HttpClient::Attach(ClientCall& call, const std::shared_ptr<Connection>& connection) {
  std::lock_guard<std::mutex> lock(call.mu_);
  if (call.cancelled_) return false;
  call.connection_ = connection;
  return true;
}

absl::Status HttpClient::Run(ClientCall& call, const Prepared& request,
                             const ClientCallbacks& callbacks) {
  const absl::Status cancelled =
      absl::CancelledError(base::StrCat("request to ", request.where, " cancelled"));
  bool fresh_only = false;
  for (;;) {
    std::shared_ptr<Connection> connection;
    const bool reused = !fresh_only && (connection = TakeIdle(request.key)) != nullptr;
    if (reused) {
      if (!Attach(call, connection)) return cancelled;
      connections_reused_.fetch_add(1);
    } else {
      // Connect attaches the new connection itself, so that Cancel can abort the connect.
      absl::StatusOr<std::shared_ptr<Connection>> made = Connect(call, request);
      if (!made.ok()) {
        std::lock_guard<std::mutex> lock(call.mu_);
        call.connection_.reset();
        return call.cancelled_ ? cancelled : made.status();
      }
      connection = std::move(made).value();
    }
    if (callbacks.on_connected) callbacks.on_connected(reused);
    Stale stale = Stale::kNo;
    bool reusable = false;
    absl::Status status = Exchange(call, *connection, request, callbacks, stale, reusable);
    bool was_cancelled;
    {
      std::lock_guard<std::mutex> lock(call.mu_);
      call.connection_.reset();
      was_cancelled = call.cancelled_;
    }
    if (!status.ok() && was_cancelled) return cancelled;
    if (reused &&
        (stale == Stale::kUnsent || (stale == Stale::kUnanswered && request.retry_unanswered))) {
      // The server closed the idle connection (perhaps as we sent): it did not get the whole
      // request, or got it and closed without a byte of answer (a closing keep-alive
      // connection, or a server that died). Sent again on a fresh connection; the second case
      // only for requests that are safe to repeat.
      stale_retries_.fetch_add(1);
      fresh_only = true;
      continue;
    }
    // A cancelled call may have left an abort queued on the connection: never pooled.
    if (status.ok() && reusable && !was_cancelled) PutIdle(request.key, std::move(connection));
    return status;
  }
}

absl::StatusOr<std::shared_ptr<ClientCall::Connection>> HttpClient::Connect(
    ClientCall& call, const Prepared& request) {
  const HttpUrl& url = request.url;
  auto c = std::make_shared<Connection>(url.tls ? &tls_->context : nullptr);
  if (!Attach(call, c)) {
    return absl::CancelledError(base::StrCat("request to ", request.where, " cancelled"));
  }
  c->Arm(options_.connect_timeout);
  beast::error_code ec;
  auto failure = [&](std::string_view what) -> absl::Status {
    c->Disarm();
    if (c->timed_out) {
      return absl::DeadlineExceededError(base::StrCat(
          "connecting to ", request.where, " timed out after ", Ms(options_.connect_timeout)));
    }
    return absl::UnavailableError(base::StrCat(what, request.where, ": ", ec.message()));
  };
  bool done = false;
  tcp::resolver::results_type endpoints;
  c->resolver.async_resolve(url.host, url.port,
                            [&](const beast::error_code& e, tcp::resolver::results_type r) {
                              ec = e;
                              endpoints = std::move(r);
                              done = true;
                            });
  c->RunUntil(done);
  if (ec) return failure("cannot resolve ");
  done = false;
  net::async_connect(c->socket(), endpoints, [&](const beast::error_code& e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  c->RunUntil(done);
  if (ec) return failure("cannot connect to ");
  beast::error_code ignored;
  c->socket().set_option(tcp::no_delay(true), ignored);
  if (c->tls) {
    SSL* handle = c->tls->native_handle();
    absl::Status named = internal::SetTlsPeerName(handle, url.host);
    if (!named.ok()) {
      c->Disarm();
      return named;
    }
    done = false;
    c->tls->async_handshake(ssl::stream_base::client, [&](const beast::error_code& e) {
      ec = e;
      done = true;
    });
    c->RunUntil(done);
    if (ec) {
      if (c->timed_out || ec == net::error::operation_aborted) return failure("");
      c->Disarm();
      return internal::TlsHandshakeError(handle, ec, url.host, url.port);
    }
  }
  c->Disarm();
  connections_opened_.fetch_add(1);
  return c;
}

absl::Status HttpClient::Exchange(ClientCall& call, Connection& c, const Prepared& request,
                                  const ClientCallbacks& callbacks, Stale& stale, bool& reusable) {
  const std::string& where = request.where;
  beast::error_code ec;
  bool done = false;
  auto cancelled = [&] {
    return absl::CancelledError(base::StrCat("request to ", where, " cancelled"));
  };

  // The request, then the response headers, within response_timeout.
  c.Arm(options_.response_timeout);
  c.Use([&](auto& stream) {
    http::async_write(stream, request.message, [&](const beast::error_code& e, size_t) {
      ec = e;
      done = true;
    });
  });
  c.RunUntil(done);
  const bool written = !ec;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  bool interim_seen = false;
  while (!ec) {
    parser.emplace();
    parser->header_limit(kMaxHeaderBytes);
    // Streamed on, never held. (Not boost::none: Beast 1.74 compares a length with it as
    // exceeding.)
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (request.head) parser->skip(true);
    done = false;
    c.Use([&](auto& stream) {
      http::async_read_header(stream, buffer, *parser, [&](const beast::error_code& e, size_t) {
        ec = e;
        done = true;
      });
    });
    c.RunUntil(done);
    if (ec) break;
    const unsigned status = parser->get().result_int();
    if (status >= 200 || status == 101) break;
    interim_seen = true;  // 100 Continue, 103 Early Hints: the final response follows
  }
  c.Disarm();
  if (ec) {
    if (call.cancelled()) return cancelled();
    if (c.timed_out) {
      return absl::DeadlineExceededError(base::StrCat("no response headers from ", where,
                                                      " within ", Ms(options_.response_timeout)));
    }
    const bool nothing_received =
        !interim_seen && (!parser || !parser->got_some()) && buffer.size() == 0;
    if (nothing_received && IsClosed(ec)) {
      stale = written ? Stale::kUnanswered : Stale::kUnsent;
      return absl::UnavailableError(
          base::StrCat("connection to ", where, " closed before the response: ", ec.message()));
    }
    if (ec == http::error::header_limit) {
      return absl::UnavailableError(
          base::StrCat("response headers from ", where, " exceed ", kMaxHeaderBytes, " bytes"));
    }
    return absl::UnavailableError(
        base::StrCat("bad response headers from ", where, ": ", ec.message()));
  }

  const auto& head = parser->get();
  if (callbacks.on_headers) {
    HttpHeaders headers;
    for (const auto& field : head) {
      headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    callbacks.on_headers(static_cast<int>(head.result_int()), std::move(headers));
  }

  // The body, each piece handed on as soon as it is read; read_timeout between reads.
  uint64_t received = 0;
  std::vector<char> chunk(kReadChunkBytes);
  while (!parser->is_done()) {
    if (call.cancelled()) return cancelled();
    parser->get().body().data = chunk.data();
    parser->get().body().size = chunk.size();
    c.Arm(options_.read_timeout);
    done = false;
    c.Use([&](auto& stream) {
      http::async_read_some(stream, buffer, *parser, [&](const beast::error_code& e, size_t) {
        ec = e;
        done = true;
      });
    });
    c.RunUntil(done);
    c.Disarm();
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = chunk.size() - parser->get().body().size;
    if (got > 0) {
      received += got;
      if (callbacks.on_data) callbacks.on_data(std::string_view(chunk.data(), got));
    }
    if (!ec) continue;
    if (call.cancelled()) return cancelled();
    if (c.timed_out) {
      return absl::DeadlineExceededError(base::StrCat("no response data from ", where, " for ",
                                                      Ms(options_.read_timeout), " (after ",
                                                      received, " bytes of the response)"));
    }
    if (IsClosed(ec)) {
      return absl::UnavailableError(base::StrCat("connection to ", where, " closed after ",
                                                 received, " bytes of the response"));
    }
    return absl::UnavailableError(base::StrCat("response from ", where, " broke off after ",
                                               received, " bytes: ", ec.message()));
  }
  // Bytes beyond the response were not asked for: such a connection is not reused.
  reusable = head.keep_alive() && !parser->need_eof() && buffer.size() == 0;
  return absl::OkStatus();
}

std::shared_ptr<ClientCall::Connection> HttpClient::TakeIdle(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireIdleLocked(std::chrono::steady_clock::now());
  auto it = idle_.find(key);
  if (it == idle_.end()) return nullptr;
  std::shared_ptr<Connection> found;
  while (!found && !it->second.empty()) {
    // The newest first: the least likely to have been closed by the server.
    std::shared_ptr<Connection> c = std::move(it->second.back().connection);
    it->second.pop_back();
    if (c->LooksAlive()) found = std::move(c);
  }
  if (it->second.empty()) idle_.erase(it);
  return found;
}

void HttpClient::PutIdle(const std::string& key, std::shared_ptr<Connection> connection) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  ExpireIdleLocked(now);
  if (options_.max_idle_per_host == 0) return;
  auto& list = idle_[key];
  list.push_back(Idle{std::move(connection), now});
  while (list.size() > options_.max_idle_per_host) list.pop_front();
}

void HttpClient::ExpireIdleLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& list = it->second;
    while (!list.empty() && now - list.front().since >= options_.idle_lifetime) list.pop_front();
    it = list.empty() ? idle_.erase(it) : std::next(it);
  }
}

}  // namespace contextd::transport
