#include "transport/http_server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <openssl/crypto.h>

#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "base/ids.h"
#include "base/logging.h"
#include "transport/internal/message_shape.h"

namespace contextd::transport {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using protocol::Json;

namespace {

using SteadyNanos = int64_t;

SteadyNanos NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using internal::IsEmptyArray;
using internal::IsResponse;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  return Lower(hay).find(needle) != std::string::npos;
}

// Splits "host[:port]" / "[v6]:port" into lowercase host and port ("" when absent).
void SplitHostPort(std::string_view hp, std::string* host, std::string* port) {
  host->clear();
  port->clear();
  if (!hp.empty() && hp.front() == '[') {
    size_t close = hp.find(']');
    if (close == std::string_view::npos) {
      *host = Lower(hp);
      return;
    }
    *host = Lower(hp.substr(0, close + 1));
    if (close + 1 < hp.size() && hp[close + 1] == ':') *port = std::string(hp.substr(close + 2));
    return;
  }
  size_t colon = hp.rfind(':');
  if (colon != std::string_view::npos && hp.find(':') == colon) {
    *host = Lower(hp.substr(0, colon));
    *port = std::string(hp.substr(colon + 1));
  } else {
    *host = Lower(hp);
  }
}

// One allowlist entry: optional scheme, host, optional port.
struct HostRule {
  std::string scheme;  // origins only; "" = http or https
  std::string host;
  std::string port;  // "" = any
};

std::vector<HostRule> LoopbackRules() {
  return {{"", "localhost", ""}, {"", "127.0.0.1", ""}, {"", "[::1]", ""}};
}

// Parses "scheme://host[:port]" (origins) or "host[:port]" (hosts).
HostRule ParseRule(std::string_view text, bool with_scheme) {
  HostRule r;
  if (with_scheme) {
    size_t sep = text.find("://");
    if (sep != std::string_view::npos) {
      r.scheme = Lower(text.substr(0, sep));
      text.remove_prefix(sep + 3);
    }
    while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  }
  SplitHostPort(text, &r.host, &r.port);
  return r;
}

bool Matches(const std::vector<HostRule>& rules, const std::string& scheme,
             const std::string& host, const std::string& port) {
  for (const auto& r : rules) {
    if (r.host != host) continue;
    if (!r.port.empty() && r.port != port) continue;
    if (r.scheme.empty()) {
      if (!scheme.empty() && scheme != "http" && scheme != "https") continue;
    } else if (r.scheme != scheme) {
      continue;
    }
    return true;
  }
  return false;
}

const char* StatusText(int code) {
  switch (code) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

// The JSON-RPC error body used for HTTP-level failures (as the reference SDK does).
std::string ErrorBody(int code, std::string_view message) {
  return protocol::Serialize(protocol::MakeError(nullptr, code, message));
}

std::string ChunkOf(std::string_view data) {
  char hex[20];
  auto [end, ec] = std::to_chars(hex, hex + sizeof(hex), data.size(), 16);
  (void)ec;
  std::string out;
  out.reserve(data.size() + 16);
  out.append(hex, end);
  out.append("\r\n");
  out.append(data);
  out.append("\r\n");
  return out;
}

constexpr size_t kMaxQueuedStreamBytes = 8u << 20;  // a slower SSE reader is disconnected

}  // namespace

class Connection;

// Where the answers to one request id of a session go: the POST connection waiting for them.
// Holds the connection alive while it waits (released when answered, abandoned or detached).
struct Route {
  std::shared_ptr<Connection> conn;
  uint64_t gen = 0;
};

// The MessageSink of one HTTP session: routes messages to the POST waiting for them, or to the
// standalone GET stream (with a bounded replay buffer for Last-Event-ID). Thread-safe.
class HttpSink final : public protocol::MessageSink {
 public:
  explicit HttpSink(size_t replay_max) : replay_max_(replay_max) {}

  void Send(Json message, const Json& related_request_id) override;

  // Sends an already serialized message to the standalone stream (buffered for replay).
  void SendStandalone(std::string payload);

  enum class AddResult { kAdded, kDuplicate, kSessionEnded };
  // Registers `key` for a request of a POST.
  AddResult AddRoute(const std::string& key, Route route) {
    std::lock_guard<std::mutex> lock(mu_);
    if (detached_) return AddResult::kSessionEnded;
    return routes_.try_emplace(key, std::move(route)).second ? AddResult::kAdded
                                                             : AddResult::kDuplicate;
  }

  // Removes the routes of an abandoned POST (only those still pointing at it).
  void RemoveRoutes(const std::vector<std::string>& keys, const Connection* conn, uint64_t gen);

  // Attaches the standalone stream. False (409) if one is attached. Fills `replay` with the
  // buffered events after `last_event_id` (when given).
  bool AttachStream(Route route, std::optional<uint64_t> last_event_id,
                    std::vector<std::pair<uint64_t, std::string>>* replay);
  void DetachStream(const Connection* conn, uint64_t gen);

  // True when a GET stream is attached or a request is in flight (the session is not idle).
  bool Busy() {
    std::lock_guard<std::mutex> lock(mu_);
    return has_stream_ || !routes_.empty();
  }

  // Ends delivery: later messages are dropped. With `notify`, connections still routed get
  // OnSessionGone. Idempotent.
  void Detach(bool notify);

 private:
  void StandaloneLocked(std::string payload);

  const size_t replay_max_;
  std::mutex mu_;
  bool detached_ = false;
  std::unordered_map<std::string, Route> routes_;
  bool has_stream_ = false;
  Route stream_;
  uint64_t next_event_id_ = 0;
  std::deque<std::pair<uint64_t, std::string>> replay_;
};

// A DELETE waiting for its session's end to be durable (Session::CloseThen). The engine's
// confirmation reaches the connection through it, unless the server stopped first: Stop() lets
// go of the connection before the io_context goes away, so that nothing posts to that io_context
// or outlives it holding a socket of it. The route holds the connection alive while it waits:
// with no request timeout and a pipelined request buffered, nothing else does.
struct PendingEnd {
  std::mutex mu;
  Route route;  // conn null once delivered or after Stop()
};

// One MCP session of the server.
struct SessionEntry {
  std::string id;
  std::string tenant;
  std::shared_ptr<protocol::Session> session;
  std::shared_ptr<HttpSink> sink;
  std::atomic<SteadyNanos> last_active{0};
};

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::shared_ptr<protocol::SessionFactory> factory)
      : opts_(std::move(options)), factory_(std::move(factory)) {
    ioc_ = std::make_unique<net::io_context>(std::max(1, opts_.io_threads));
    if (opts_.allowed_hosts.empty()) {
      hosts_ = LoopbackRules();
    } else if (opts_.allowed_hosts.size() == 1 && opts_.allowed_hosts[0] == "*") {
      any_host_ = true;
    } else {
      for (const auto& h : opts_.allowed_hosts) hosts_.push_back(ParseRule(h, false));
    }
    if (opts_.allowed_origins.empty()) {
      origins_ = LoopbackRules();
    } else if (opts_.allowed_origins.size() == 1 && opts_.allowed_origins[0] == "*") {
      any_origin_ = true;
    } else {
      for (const auto& o : opts_.allowed_origins) origins_.push_back(ParseRule(o, true));
    }
  }

  absl::Status Listen();
  void StartThreads();
  void Stop();

  const HttpServerOptions& opts() const { return opts_; }

  bool HostAllowed(std::string_view host_header) const {
    if (any_host_ || host_header.empty()) return true;  // browsers always send Host
    std::string host, port;
    SplitHostPort(host_header, &host, &port);
    return Matches(hosts_, "", host, port);
  }

  bool OriginAllowed(std::string_view origin) const {
    if (any_origin_) return true;
    size_t sep = origin.find("://");
    if (sep == std::string_view::npos) return false;  // includes "null"
    std::string scheme = Lower(origin.substr(0, sep));
    std::string_view rest = origin.substr(sep + 3);
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    std::string host, port;
    SplitHostPort(rest, &host, &port);
    return Matches(origins_, scheme, host, port);
  }

  // Tenant for an Authorization header value, or nullopt (401).
  std::optional<std::string> Authenticate(std::string_view authorization) const {
    if (opts_.bearer_tokens.empty()) return std::string("local");
    constexpr std::string_view kBearer = "bearer ";
    if (authorization.size() <= kBearer.size() ||
        Lower(authorization.substr(0, kBearer.size())) != kBearer) {
      return std::nullopt;
    }
    std::string_view token = authorization.substr(kBearer.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    std::optional<std::string> tenant;
    // Compare against every token in constant time per token.
    for (const auto& [t, ten] : opts_.bearer_tokens) {
      if (t.size() == token.size() && CRYPTO_memcmp(t.data(), token.data(), t.size()) == 0) {
        tenant = ten;
      }
    }
    return tenant;
  }

  bool VersionSupported(std::string_view v) const {
    for (const auto& s : opts_.supported_protocol_versions) {
      if (s == v) return true;
    }
    return false;
  }

  // Creates a session; nullptr when max_sessions is reached.
  std::shared_ptr<SessionEntry> CreateSession(const std::string& tenant) {
    auto entry = std::make_shared<SessionEntry>();
    entry->id = base::RandomId("", 16);
    entry->tenant = tenant;
    entry->sink = std::make_shared<HttpSink>(opts_.replay_events);
    entry->last_active.store(NowNanos());
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      if (stopping_ || sessions_.size() >= opts_.max_sessions) return nullptr;
      sessions_.emplace(entry->id, entry);
    }
    protocol::SessionInfo info;
    info.session_id = entry->id;
    info.tenant = tenant;
    info.transport = "http";
    entry->session = factory_->CreateSession(std::move(info), entry->sink);
    return entry;
  }

  // The session `id` of `tenant`, or nullptr (unknown, ended, other tenant).
  std::shared_ptr<SessionEntry> FindSession(const std::string& id, const std::string& tenant) {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->tenant != tenant || !it->second->session) {
      return nullptr;
    }
    it->second->last_active.store(NowNanos(), std::memory_order_relaxed);
    return it->second;
  }

  // Registers a DELETE's wait for Stop() to cut (see PendingEnd).
  void TrackEnd(const std::shared_ptr<PendingEnd>& end) {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    std::erase_if(pending_ends_, [](const std::weak_ptr<PendingEnd>& w) { return w.expired(); });
    pending_ends_.push_back(end);
  }

  // Removes and closes a session. False if unknown. With `done`, the session calls it once its
  // end is durable (Session::CloseThen).
  bool CloseSession(const std::string& id, std::string_view reason,
                    std::function<void(const absl::Status&)> done = nullptr) {
    std::shared_ptr<SessionEntry> entry;
    {
      std::lock_guard<std::mutex> lock(sessions_mu_);
      auto it = sessions_.find(id);
      if (it == sessions_.end()) return false;
      entry = std::move(it->second);
      sessions_.erase(it);
    }
    entry->sink->Detach(/*notify=*/true);
    if (done) {
      entry->session->CloseThen(reason, std::move(done));
    } else {
      entry->session->Close(reason);
    }
    return true;
  }

  void SweepIdleSessions();
  void ScheduleSweep();
  void DoAccept();

  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> requests_total{0};
  uint64_t sessions_open() {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    return sessions_.size();
  }

  net::io_context& ioc() { return *ioc_; }
  uint16_t port() const { return port_; }
  std::string host_for_url() const { return host_for_url_; }

 private:
  HttpServerOptions opts_;
  std::shared_ptr<protocol::SessionFactory> factory_;
  std::vector<HostRule> hosts_;
  std::vector<HostRule> origins_;
  bool any_host_ = false;
  bool any_origin_ = false;
  uint16_t port_ = 0;
  std::string host_for_url_;

  std::mutex sessions_mu_;
  bool stopping_ = false;
  std::unordered_map<std::string, std::shared_ptr<SessionEntry>> sessions_;
  std::vector<std::weak_ptr<PendingEnd>> pending_ends_;  // DELETEs waiting for the engine

  std::mutex stop_mu_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
  // Destroyed explicitly in Stop(), before the members above (connections touch them).
  std::unique_ptr<net::io_context> ioc_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<net::steady_timer> sweep_timer_;
};

// One TCP connection: reads requests one at a time, answers them, and may become an SSE stream.
// All members are touched only on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl* srv, tcp::socket socket)
      : srv_(srv),
        stream_(std::move(socket)),
        timer_(stream_.get_executor()),
        idle_timer_(stream_.get_executor()) {
    srv_->connections_open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Connection() { srv_->connections_open.fetch_sub(1, std::memory_order_relaxed); }

  void Start() {
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    stream_.socket().non_blocking(true, ec);
    ArmWatchdog(std::chrono::steady_clock::now() +
                std::min<std::chrono::steady_clock::duration>(srv_->opts().keep_alive_timeout,
                                                               srv_->opts().write_timeout));
    DoRead();
  }

  // Called through the sink (any thread): a message for POST generation `gen`.
  void PostMessage(uint64_t gen, Json message, bool is_response) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), gen, m = std::move(message), is_response]() mutable {
                self->OnSessionMessage(gen, protocol::Serialize(m), is_response);
              });
  }
  // Called through the sink: an event for the standalone stream of generation `gen`.
  void PostEvent(uint64_t gen, uint64_t event_id, std::string payload) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), gen, event_id, p = std::move(payload)]() mutable {
                self->OnStreamEvent(gen, event_id, p);
              });
  }
  // Called through the sink: the session ended while this connection served it.
  void PostSessionGone(uint64_t gen) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), gen] { self->OnSessionGone(gen); });
  }

 private:
  // kEnding: a DELETE waits for the session's end to be durable.
  enum class Mode { kReading, kWaiting, kPostStream, kGetStream, kEnding, kResponding, kClosed };
  enum class After { kNone, kReadNext, kClose };

  // ---- Reading requests.

  void DoRead() {
    mode_ = Mode::kReading;
    ++gen_;
    session_.reset();
    extra_headers_.clear();
    if (watch_pending_) {
      // The pending watch read delivers the first bytes of the next request.
      ArmIdleTimer();
      return;
    }
    if (buffer_.size() > 0) {
      DoReadHeader();
      return;
    }
    ArmIdleTimer();
    StartWatch();
  }

  // Between requests: the connection is closed if no byte arrives within keep_alive_timeout.
  // Only a timestamp is stored here; the watchdog enforces it.
  void ArmIdleTimer() {
    awaiting_first_byte_ = true;
    idle_since_ = std::chrono::steady_clock::now();
  }

  // One timer per connection, always armed, enforces the keep-alive idle limit and the write
  // timeout from timestamps, so that requests and writes cost no timer operations.
  void ArmWatchdog(std::chrono::steady_clock::time_point when) {
    idle_timer_.expires_at(when);
    idle_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->mode_ == Mode::kClosed) return;
      self->OnWatchdog();
    });
  }

  void OnWatchdog() {
    const auto now = std::chrono::steady_clock::now();
    const auto ka = srv_->opts().keep_alive_timeout;
    const auto wt = srv_->opts().write_timeout;
    const bool idle = mode_ == Mode::kReading && awaiting_first_byte_;
    if (idle && now >= idle_since_ + ka) return Close();
    if (writing_ && now >= write_started_ + wt) {
      base::LogDebug("http: closing a connection whose write made no progress");
      return Close();
    }
    auto next = now + std::min<std::chrono::steady_clock::duration>(ka, wt);
    if (idle) next = std::min(next, idle_since_ + ka);
    if (writing_) next = std::min(next, write_started_ + wt);
    ArmWatchdog(next);
  }

  // Reads whatever the client sends while no request is being parsed: the first bytes of the
  // next request, or EOF/reset, which tells a waiting POST or a GET stream that the client left.
  void StartWatch() {
    watch_pending_ = true;
    // Wait for readability first: a speculative read right after a response would almost
    // always find nothing (one wasted syscall per request).
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](
                                                            beast::error_code ec) {
      self->watch_pending_ = false;
      if (self->mode_ == Mode::kClosed) return;
      if (ec) return self->Close();
      const size_t n = self->stream_.socket().read_some(self->buffer_.prepare(8192), ec);
      if (ec == net::error::would_block || ec == net::error::try_again) {
        if (self->mode_ == Mode::kReading || self->mode_ == Mode::kGetStream ||
            self->mode_ == Mode::kWaiting || self->mode_ == Mode::kPostStream ||
            self->mode_ == Mode::kEnding) {
          self->StartWatch();
        }
        return;
      }
      if (ec) return self->Close();
      self->buffer_.commit(n);
      switch (self->mode_) {
        case Mode::kReading:
          self->awaiting_first_byte_ = false;
          self->DoReadHeader();
          break;
        case Mode::kGetStream:
          // Nothing is expected on a stream; keep detecting its end, within bounds.
          if (self->buffer_.size() > (64u << 10)) return self->Close();
          self->StartWatch();
          break;
        default:
          // A pipelined request: kept in the buffer for DoRead.
          break;
      }
    });
  }

  void DoReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_->opts().max_header_bytes));
    parser_->body_limit(srv_->opts().max_message_bytes);
    parser_->eager(true);
    // Fast path: the whole request is usually in the buffer already; parse it without any
    // asynchronous operation (and without arming a timeout).
    beast::error_code ec;
    while (buffer_.size() > 0 && !parser_->is_done()) {
      const size_t used = parser_->put(buffer_.data(), ec);
      if (ec == http::error::need_more) {
        ec = {};
        buffer_.consume(used);
        break;
      }
      if (ec) return OnReadError(ec);
      buffer_.consume(used);
      if (used == 0) break;
    }
    if (parser_->is_done()) return OnBody({});
    if (parser_->is_header_done()) return OnHeader({});
    stream_.expires_after(srv_->opts().header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code e, size_t) {
                              self->OnHeader(e);
                            });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    if (parser_->is_done()) return OnBody({});
    // curl and others wait for "100 Continue" before sending a larger body.
    auto expect = parser_->get().find(http::field::expect);
    if (expect != parser_->get().end() &&
        beast::iequals(expect->value(), beast::string_view("100-continue"))) {
      QueueRaw("HTTP/1.1 100 Continue\r\n\r\n");
    }
    stream_.expires_after(srv_->opts().body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, size_t) { self->OnBody(e); });
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    stream_.expires_never();
    srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
    req_ = parser_->release();
    parser_.reset();
    keep_alive_ = req_.keep_alive();
    http10_ = req_.version() < 11;
    HandleRequest();
  }

  void OnReadError(beast::error_code ec) {
    stream_.expires_never();  // the error response must not inherit an expired read deadline
    if (ec == http::error::header_limit) {
      return RespondError(431, "request header fields too large", /*close=*/true);
    }
    if (ec == http::error::body_limit) {
      return RespondError(413, "message exceeds " +
                                   std::to_string(srv_->opts().max_message_bytes) + " bytes",
                          /*close=*/true);
    }
    if (ec == beast::error::timeout || ec == http::error::end_of_stream ||
        ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted || ec == http::error::partial_message) {
      return Close();
    }
    // Malformed HTTP.
    RespondError(400, "malformed HTTP request: " + ec.message(), /*close=*/true);
  }

  // ---- Dispatch.

  std::string_view Header(std::string_view name) const {
    auto it = req_.find(beast::string_view(name.data(), name.size()));
    if (it == req_.end()) return {};
    return std::string_view(it->value().data(), it->value().size());
  }

  void HandleRequest() {
    std::string_view target(req_.target().data(), req_.target().size());
    std::string_view path = target.substr(0, target.find('?'));
    const auto method = req_.method();

    if (path == "/healthz") {
      if (method != http::verb::get && method != http::verb::head) {
        return Respond(405, "text/plain", "method not allowed\n", "Allow: GET\r\n");
      }
      return Respond(200, "text/plain", "ok\n");
    }
    if (!srv_->HostAllowed(Header("Host"))) {
      return RespondError(403, "forbidden: Host not allowed");
    }
    if (req_.find(http::field::origin) != req_.end() && !srv_->OriginAllowed(Header("Origin"))) {
      return RespondError(403, "forbidden: Origin not allowed");
    }
    const bool is_mcp = path == srv_->opts().path;
    const bool is_metrics = path == "/metrics" && srv_->opts().metrics;
    if (!is_mcp && !is_metrics) return RespondError(404, "not found");

    std::optional<std::string> tenant = srv_->Authenticate(Header("Authorization"));
    if (!tenant) {
      std::string www = "WWW-Authenticate: Bearer realm=\"contextd\"";
      if (req_.find(http::field::authorization) != req_.end()) www += ", error=\"invalid_token\"";
      www += "\r\n";
      return Respond(401, "application/json", ErrorBody(-32001, "unauthorized"), www);
    }
    tenant_ = std::move(*tenant);

    if (is_metrics) {
      if (method != http::verb::get) return RespondError(405, "method not allowed");
      return Respond(200, "text/plain; version=0.0.4", srv_->opts().metrics());
    }
    switch (method) {
      case http::verb::post:
        return HandlePost();
      case http::verb::get:
        return HandleGet();
      case http::verb::delete_:
        return HandleDelete();
      default:
        return Respond(405, "application/json", ErrorBody(-32000, "method not allowed"),
                       "Allow: GET, POST, DELETE\r\n");
    }
  }

  // Looks up the session named by Mcp-Session-Id; answers 400/404 itself when it fails.
  std::shared_ptr<SessionEntry> RequireSession() {
    std::string_view sid = Header("Mcp-Session-Id");
    if (sid.empty()) {
      RespondError(400, "bad request: Mcp-Session-Id header is required");
      return nullptr;
    }
    auto entry = srv_->FindSession(std::string(sid), tenant_);
    if (!entry) RespondError(404, "session not found");
    return entry;
  }

  bool CheckProtocolVersionHeader() {
    auto it = req_.find("MCP-Protocol-Version");
    if (it == req_.end()) return true;  // absent: 2025-03-26 is assumed (spec)
    std::string_view v(it->value().data(), it->value().size());
    if (srv_->VersionSupported(v)) return true;
    RespondError(400, "bad request: unsupported MCP-Protocol-Version: " + std::string(v));
    return false;
  }

  void HandlePost() {
    std::string_view accept = Header("Accept");
    if (accept.empty()) {
      accept_json_ = true;
      accept_sse_ = false;
    } else {
      const std::string a = Lower(accept);
      const bool any = a.find("*/*") != std::string::npos;
      accept_json_ = any || a.find("application/json") != std::string::npos ||
                     a.find("application/*") != std::string::npos;
      accept_sse_ = any || a.find("text/event-stream") != std::string::npos ||
                    a.find("text/*") != std::string::npos;
      if (!accept_json_ && !accept_sse_) {
        return RespondError(406, "not acceptable: Accept must include application/json or "
                                 "text/event-stream");
      }
    }
    std::string_view ctype = Header("Content-Type");
    if (!ctype.empty() && !ContainsNoCase(ctype, "application/json")) {
      return RespondError(415, "unsupported media type: Content-Type must be application/json");
    }

    protocol::Incoming in = protocol::ParseIncoming(req_.body(), srv_->opts().max_message_bytes);
    if ((!in.batch || IsEmptyArray(req_.body())) &&
        std::holds_alternative<protocol::ParseError>(in.items[0])) {
      const auto& err = std::get<protocol::ParseError>(in.items[0]);
      return Respond(400, "application/json",
                     protocol::Serialize(protocol::MakeError(err.id, err.code, err.message)));
    }
    bool is_init = false;
    for (const auto& item : in.items) {
      if (const auto* m = std::get_if<protocol::Message>(&item)) {
        if (m->kind == protocol::MessageKind::kRequest && m->method == "initialize") {
          is_init = true;
        }
      }
    }
    std::string_view sid = Header("Mcp-Session-Id");
    std::shared_ptr<SessionEntry> entry;
    std::string new_session_header;
    if (sid.empty()) {
      if (!is_init || in.batch) {
        return RespondError(400, "bad request: Mcp-Session-Id header is required");
      }
      entry = srv_->CreateSession(tenant_);
      if (!entry) return RespondError(503, "too many sessions");
      new_session_header = "Mcp-Session-Id: " + entry->id + "\r\n";
    } else {
      if (!is_init && !CheckProtocolVersionHeader()) return;
      entry = srv_->FindSession(std::string(sid), tenant_);
      if (!entry) return RespondError(404, "session not found");
    }
    session_ = entry;
    extra_headers_ = std::move(new_session_header);
    batch_ = in.batch;
    collected_.clear();
    route_keys_.clear();
    remaining_ = 0;

    std::vector<protocol::Message> to_session;
    to_session.reserve(in.items.size());
    Route route{shared_from_this(), gen_};
    for (auto& item : in.items) {
      if (auto* err = std::get_if<protocol::ParseError>(&item)) {
        collected_.push_back(
            protocol::Serialize(protocol::MakeError(err->id, err->code, err->message)));
        continue;
      }
      auto& msg = std::get<protocol::Message>(item);
      if (msg.kind == protocol::MessageKind::kRequest) {
        std::string key = msg.id.dump();
        const auto added = entry->sink->AddRoute(key, route);
        if (added == HttpSink::AddResult::kSessionEnded) {
          // Deleted or expired between lookup and now.
          AbandonRoutes();
          return RespondError(404, "session not found");
        }
        if (added == HttpSink::AddResult::kDuplicate) {
          collected_.push_back(protocol::Serialize(protocol::MakeError(
              msg.id, protocol::kInvalidRequest,
              "invalid request: a request with this id is already in flight")));
          continue;
        }
        route_keys_.push_back(std::move(key));
        ++remaining_;
      }
      to_session.push_back(std::move(msg));
    }
    if (remaining_ > 0) {
      mode_ = Mode::kWaiting;
      StartRequestTimer();
      if (!watch_pending_ && buffer_.size() == 0) StartWatch();
    }
    for (auto& msg : to_session) entry->session->Receive(std::move(msg));
    if (remaining_ == 0) {
      if (collected_.empty()) return Respond(202, "", "");
      // Only unanswerable requests: their errors (a batch, or a single duplicate id).
      return Respond(200, "application/json", JoinCollected());
    }
    // Answers arrive through OnSessionMessage.
  }

  void HandleGet() {
    std::string_view accept = Header("Accept");
    if (!ContainsNoCase(accept, "text/event-stream")) {
      return RespondError(406, "not acceptable: GET requires Accept: text/event-stream");
    }
    if (!CheckProtocolVersionHeader()) return;
    auto entry = RequireSession();
    if (!entry) return;
    std::optional<uint64_t> last;
    std::string_view last_id = Header("Last-Event-ID");
    if (!last_id.empty()) {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(last_id.data(), last_id.data() + last_id.size(), v);
      if (ec == std::errc() && p == last_id.data() + last_id.size()) last = v;
    }
    std::vector<std::pair<uint64_t, std::string>> replay;
    if (!entry->sink->AttachStream(Route{shared_from_this(), gen_}, last, &replay)) {
      return RespondError(409, "conflict: this session already has a GET stream");
    }
    session_ = entry;
    mode_ = Mode::kGetStream;
    StartSseHeaders("");
    for (auto& [id, payload] : replay) WriteEvent(id, payload);
    ScheduleKeepAlive();
    if (!watch_pending_) StartWatch();
  }

  void HandleDelete() {
    if (!CheckProtocolVersionHeader()) return;
    auto entry = RequireSession();
    if (!entry) return;
    // Answered once the end is durable (the branches it force-returned are committed): a client
    // told 200 must not find them active after a crash.
    mode_ = Mode::kEnding;
    StartRequestTimer();
    if (!watch_pending_ && buffer_.size() == 0) StartWatch();
    auto end = std::make_shared<PendingEnd>();
    end->route = Route{shared_from_this(), gen_};
    srv_->TrackEnd(end);
    // Only whether the end was saved crosses threads: an error Status's shared representation is
    // released inside the (uninstrumented) absl library, which ThreadSanitizer reports as a race.
    bool closed =
        srv_->CloseSession(entry->id, "client deleted session", [end](const absl::Status& ended) {
          std::lock_guard<std::mutex> lock(end->mu);
          if (auto self = std::move(end->route.conn)) {
            net::post(self->stream_.get_executor(),
                      [self, gen = end->route.gen, saved = ended.ok()] {
                        self->OnSessionEnded(gen, saved);
                      });
          }
        });
    if (!closed) {  // ended meanwhile (idle timeout, another DELETE)
      timer_.cancel();
      RespondError(404, "session not found");
    }
  }

  void OnSessionEnded(uint64_t gen, bool saved) {
    if (gen != gen_ || mode_ != Mode::kEnding) return;  // timed out, or the client left
    timer_.cancel();
    if (saved) return Respond(200, "", "");
    // The storage error (with the data file's path) is in the server log, not for a client.
    RespondError(500,
                 "the session ended, but saving its end failed (see the server log): its "
                 "branches stay active until their deadlines or the server's next start");
  }

  // ---- Messages from the session.

  void OnSessionMessage(uint64_t gen, std::string payload, bool is_response) {
    if (gen != gen_ || (mode_ != Mode::kWaiting && mode_ != Mode::kPostStream)) {
      return;  // the POST this belonged to was abandoned (client gone, timeout, session ended)
    }
    if (!is_response) {
      if (mode_ == Mode::kWaiting && accept_sse_) StartPostStream();
      if (mode_ == Mode::kPostStream) {
        WriteEvent(0, payload);
      } else if (session_) {
        session_->sink->SendStandalone(std::move(payload));
      }
      return;
    }
    --remaining_;
    // A client that accepts only text/event-stream gets its answers as a stream.
    if (mode_ == Mode::kWaiting && !accept_json_) StartPostStream();
    if (mode_ == Mode::kPostStream) {
      WriteEvent(0, payload);
      if (remaining_ == 0) {
        for (const auto& c : collected_) WriteEvent(0, c);
        FinishStream(keep_alive_ && !http10_ ? After::kReadNext : After::kClose);
      }
      return;
    }
    if (batch_) {
      collected_.push_back(std::move(payload));
      if (remaining_ == 0) {
        timer_.cancel();
        Respond(200, "application/json", JoinCollected());
      }
      return;
    }
    timer_.cancel();
    Respond(200, "application/json", payload);
  }

  void OnStreamEvent(uint64_t gen, uint64_t event_id, const std::string& payload) {
    if (gen != gen_ || mode_ != Mode::kGetStream) return;
    WriteEvent(event_id, payload);
  }

  void OnSessionGone(uint64_t gen) {
    if (gen != gen_) return;
    if (mode_ == Mode::kGetStream || mode_ == Mode::kPostStream) {
      FinishStream(After::kClose);
    } else if (mode_ == Mode::kWaiting) {
      timer_.cancel();
      RespondError(404, "session ended");
    }
  }

  std::string JoinCollected() const {
    if (!batch_ && collected_.size() == 1) return collected_[0];
    std::string body = "[";
    for (size_t i = 0; i < collected_.size(); ++i) {
      if (i > 0) body.push_back(',');
      body += collected_[i];
    }
    body.push_back(']');
    return body;
  }

  void StartRequestTimer() {
    if (srv_->opts().request_timeout.count() <= 0) return;
    timer_.expires_after(srv_->opts().request_timeout);
    timer_.async_wait([self = shared_from_this(), gen = gen_](beast::error_code ec) {
      if (ec || gen != self->gen_) return;
      if (self->mode_ == Mode::kWaiting) {
        self->AbandonRoutes();
        self->RespondError(504, "timed out waiting for the answer");
      } else if (self->mode_ == Mode::kPostStream) {
        self->AbandonRoutes();
        self->FinishStream(After::kClose);
      } else if (self->mode_ == Mode::kEnding) {
        self->RespondError(504, "timed out waiting for the session's end to be saved");
      }
    });
  }

  void AbandonRoutes() {
    if (session_ && !route_keys_.empty()) session_->sink->RemoveRoutes(route_keys_, this, gen_);
    route_keys_.clear();
  }

  // ---- Writing.

  void StartSseHeaders(std::string_view extra) {
    std::string h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Cache-Control: no-cache, no-transform\r\n";
    if (http10_) {
      h += "Connection: close\r\n";
    } else {
      h += "Transfer-Encoding: chunked\r\n";
    }
    h += extra;
    h += "\r\n";
    QueueRaw(std::move(h));
  }

  void StartPostStream() {
    mode_ = Mode::kPostStream;
    StartSseHeaders(extra_headers_);
  }

  void WriteEvent(uint64_t event_id, std::string_view payload) {
    std::string ev;
    ev.reserve(payload.size() + 32);
    if (event_id != 0) {
      ev += "id: ";
      ev += std::to_string(event_id);
      ev += '\n';
    }
    ev += "event: message\ndata: ";
    ev += payload;
    ev += "\n\n";
    QueueRaw(http10_ ? std::move(ev) : ChunkOf(ev));
  }

  void FinishStream(After after) {
    timer_.cancel();
    route_keys_.clear();
    if (mode_ == Mode::kGetStream && session_) session_->sink->DetachStream(this, gen_);
    mode_ = Mode::kResponding;
    if (!http10_) QueueRaw("0\r\n\r\n");
    after_ = http10_ ? After::kClose : after;
    MaybeAfterWrite();
  }

  void ScheduleKeepAlive() {
    if (srv_->opts().sse_keepalive_interval.count() <= 0) return;
    timer_.expires_after(srv_->opts().sse_keepalive_interval);
    timer_.async_wait([self = shared_from_this(), gen = gen_](beast::error_code ec) {
      if (ec || gen != self->gen_ || self->mode_ != Mode::kGetStream) return;
      self->QueueRaw(self->http10_ ? std::string(": keep-alive\n\n") : ChunkOf(": keep-alive\n\n"));
      self->ScheduleKeepAlive();
    });
  }

  void RespondError(int status, std::string_view message, bool close = false) {
    Respond(status, "application/json", ErrorBody(status == 404 ? -32001 : -32000, message), "",
            close);
  }

  // Writes a complete response; then reads the next request or closes.
  void Respond(int status, std::string_view content_type, std::string_view body,
               std::string_view extra_headers = "", bool close = false) {
    if (mode_ == Mode::kClosed) return;
    if (mode_ == Mode::kGetStream && session_) session_->sink->DetachStream(this, gen_);
    mode_ = Mode::kResponding;
    route_keys_.clear();
    if (!keep_alive_) close = true;
    std::string out;
    out.reserve(body.size() + 160 + extra_headers_.size());
    out += "HTTP/1.1 ";
    out += std::to_string(status);
    out += ' ';
    out += StatusText(status);
    out += "\r\n";
    if (!content_type.empty()) {
      out += "Content-Type: ";
      out += content_type;
      out += "\r\n";
    }
    out += "Content-Length: ";
    out += std::to_string(body.size());
    out += "\r\n";
    out += extra_headers;
    if (status == 200 || status == 202) out += extra_headers_;
    if (close) {
      out += "Connection: close\r\n";
    } else if (http10_) {
      out += "Connection: keep-alive\r\n";
    }
    out += "\r\n";
    if (req_.method() != http::verb::head) out += body;
    extra_headers_.clear();
    QueueRaw(std::move(out));
    after_ = close ? After::kClose : After::kReadNext;
    MaybeAfterWrite();
  }

  void QueueRaw(std::string bytes) {
    if (mode_ == Mode::kClosed) return;
    queued_bytes_ += bytes.size();
    out_queue_.push_back(std::move(bytes));
    if (queued_bytes_ > kMaxQueuedStreamBytes) {
      base::LogWarn("http: closing a connection whose client does not read its stream");
      return Close();
    }
    if (!writing_) DoWrite();
  }

  void DoWrite() {
    writing_ = true;
    in_flight_.clear();
    in_flight_.swap(out_queue_);
    bufs_.clear();
    for (const auto& s : in_flight_) bufs_.emplace_back(s.data(), s.size());
    write_started_ = std::chrono::steady_clock::now();
    net::async_write(stream_, bufs_, [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->writing_ = false;
      self->queued_bytes_ -= std::min(self->queued_bytes_, n);
      if (ec) return self->Close();
      if (!self->out_queue_.empty()) return self->DoWrite();
      self->MaybeAfterWrite();
    });
  }

  void MaybeAfterWrite() {
    if (writing_ || !out_queue_.empty() || mode_ != Mode::kResponding) return;
    After after = after_;
    after_ = After::kNone;
    if (after == After::kReadNext) {
      DoRead();
    } else if (after == After::kClose) {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      Close();
    }
  }

  void Close() {
    if (mode_ == Mode::kClosed) return;
    if (mode_ == Mode::kGetStream && session_) session_->sink->DetachStream(this, gen_);
    if ((mode_ == Mode::kWaiting || mode_ == Mode::kPostStream)) AbandonRoutes();
    mode_ = Mode::kClosed;
    timer_.cancel();
    idle_timer_.cancel();
    beast::error_code ec;
    stream_.socket().close(ec);
    out_queue_.clear();
    session_.reset();
  }

  HttpServer::Impl* srv_;
  beast::tcp_stream stream_;
  net::steady_timer timer_;       // request timeout or SSE keep-alive
  net::steady_timer idle_timer_;  // the watchdog: keep-alive idle limit and write timeout
  std::chrono::steady_clock::time_point idle_since_;
  std::chrono::steady_clock::time_point write_started_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> req_;
  Mode mode_ = Mode::kReading;
  After after_ = After::kNone;
  uint64_t gen_ = 0;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool accept_json_ = true;
  bool accept_sse_ = false;
  bool batch_ = false;
  size_t remaining_ = 0;
  std::string tenant_;
  std::string extra_headers_;
  std::shared_ptr<SessionEntry> session_;
  std::vector<std::string> route_keys_;
  std::vector<std::string> collected_;
  std::vector<std::string> out_queue_;
  std::vector<std::string> in_flight_;
  std::vector<net::const_buffer> bufs_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool watch_pending_ = false;
  bool awaiting_first_byte_ = false;
};

// ---- HttpSink.

void HttpSink::Send(Json message, const Json& related_request_id) {
  if (related_request_id.is_null()) {  // for the standalone stream
    SendStandalone(protocol::Serialize(message));
    return;
  }
  const bool response = IsResponse(message);
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  auto it = routes_.find(related_request_id.dump());
  if (it != routes_.end()) {
    std::shared_ptr<Connection> c = it->second.conn;
    const uint64_t gen = it->second.gen;
    if (response) routes_.erase(it);
    if (c) {
      // Posted under the lock, so in the order of the Send calls. Serialized on the
      // connection's strand, not on the caller's thread (the engine executor, which every
      // session shares).
      c->PostMessage(gen, std::move(message), response);
      return;
    }
  }
  if (response) return;  // its POST is gone (client vanished or timed out): dropped
  // A notification of a request whose POST is gone goes to the standalone stream.
  StandaloneLocked(protocol::Serialize(message));
}

void HttpSink::SendStandalone(std::string payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  StandaloneLocked(std::move(payload));
}

void HttpSink::StandaloneLocked(std::string payload) {
  const uint64_t id = ++next_event_id_;
  std::shared_ptr<Connection> c = has_stream_ ? stream_.conn : nullptr;
  if (replay_max_ > 0) {
    replay_.emplace_back(id, c ? payload : std::move(payload));
    while (replay_.size() > replay_max_) replay_.pop_front();
  }
  if (c) c->PostEvent(stream_.gen, id, std::move(payload));
}

void HttpSink::RemoveRoutes(const std::vector<std::string>& keys, const Connection* conn,
                            uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : keys) {
    auto it = routes_.find(k);
    if (it == routes_.end() || it->second.gen != gen || it->second.conn.get() != conn) continue;
    routes_.erase(it);
  }
}

bool HttpSink::AttachStream(Route route, std::optional<uint64_t> last_event_id,
                            std::vector<std::pair<uint64_t, std::string>>* replay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return false;
  if (has_stream_) return false;
  has_stream_ = true;
  stream_ = std::move(route);
  if (last_event_id) {
    for (const auto& ev : replay_) {
      if (ev.first > *last_event_id) replay->push_back(ev);
    }
  }
  return true;
}

void HttpSink::DetachStream(const Connection* conn, uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!has_stream_ || stream_.gen != gen || stream_.conn.get() != conn) return;
  has_stream_ = false;
  stream_ = Route{};
}

void HttpSink::Detach(bool notify) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  detached_ = true;
  if (notify) {
    for (auto& [key, r] : routes_) r.conn->PostSessionGone(r.gen);
    if (has_stream_) stream_.conn->PostSessionGone(stream_.gen);
  }
  routes_.clear();
  has_stream_ = false;
  stream_ = Route{};
  replay_.clear();
}

// ---- Impl.

absl::Status HttpServer::Impl::Listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(opts_.listen_address, ec);
  if (ec) {
    return absl::InvalidArgumentError("http: invalid listen address '" + opts_.listen_address +
                                      "': " + ec.message());
  }
  if (opts_.path.empty() || opts_.path.front() != '/') {
    return absl::InvalidArgumentError("http: path must start with '/'");
  }
  acceptor_ = std::make_unique<tcp::acceptor>(net::make_strand(*ioc_));
  tcp::endpoint endpoint(address, opts_.port);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("http: cannot listen on " + opts_.listen_address + ":" +
                                  std::to_string(opts_.port) + ": " + ec.message());
  }
  port_ = acceptor_->local_endpoint().port();
  host_for_url_ = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return absl::OkStatus();
}

void HttpServer::Impl::DoAccept() {
  acceptor_->async_accept(net::make_strand(*ioc_), [this](beast::error_code ec, tcp::socket s) {
    if (ec == net::error::operation_aborted) return;
    if (!ec) {
      if (connections_open.load(std::memory_order_relaxed) >= opts_.max_connections) {
        beast::error_code ignored;
        s.close(ignored);
      } else {
        std::make_shared<Connection>(this, std::move(s))->Start();
      }
    }
    DoAccept();
  });
}

void HttpServer::Impl::ScheduleSweep() {
  if (opts_.session_idle_timeout.count() <= 0) return;
  auto period = std::clamp<std::chrono::milliseconds>(opts_.session_idle_timeout / 4,
                                                      std::chrono::milliseconds(5),
                                                      std::chrono::milliseconds(10'000));
  sweep_timer_->expires_after(period);
  sweep_timer_->async_wait([this](beast::error_code ec) {
    if (ec) return;
    SweepIdleSessions();
    ScheduleSweep();
  });
}

void HttpServer::Impl::SweepIdleSessions() {
  const SteadyNanos limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(opts_.session_idle_timeout).count();
  const SteadyNanos now = NowNanos();
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (const auto& [id, entry] : sessions_) {
      if (now - entry->last_active.load(std::memory_order_relaxed) < limit) continue;
      if (entry->sink->Busy()) continue;
      expired.push_back(id);
    }
  }
  for (const auto& id : expired) CloseSession(id, "idle timeout");
}

void HttpServer::Impl::StartThreads() {
  DoAccept();
  sweep_timer_ = std::make_unique<net::steady_timer>(net::make_strand(*ioc_));
  ScheduleSweep();
  const int n = std::max(1, opts_.io_threads);
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this] {
      // A handler that throws (allocation failure, a library bug) must not end the process.
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (const std::exception& e) {
          base::LogError(std::string("http: I/O handler failed: ") + e.what());
        }
      }
    });
  }
}

void HttpServer::Impl::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  std::unordered_map<std::string, std::shared_ptr<SessionEntry>> sessions;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    stopping_ = true;
  }
  ioc_->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    sessions.swap(sessions_);
  }
  // No sink may post to the io_context once it is being destroyed.
  for (auto& [id, entry] : sessions) entry->sink->Detach(/*notify=*/false);
  for (auto& [id, entry] : sessions) {
    if (entry->session) entry->session->Close("server shutdown");
  }
  std::vector<std::weak_ptr<PendingEnd>> ends;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    ends.swap(pending_ends_);
  }
  for (auto& weak : ends) {
    if (auto end = weak.lock()) {
      std::lock_guard<std::mutex> lock(end->mu);
      end->route.conn.reset();
    }
  }
  sweep_timer_.reset();
  acceptor_.reset();
  ioc_.reset();  // destroys pending handlers and with them every connection
}

// ---- HttpServer.

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options, std::shared_ptr<protocol::SessionFactory> factory) {
  if (!factory) return absl::InvalidArgumentError("http: a session factory is required");
  if (options.io_threads < 1) return absl::InvalidArgumentError("http: io_threads must be >= 1");
  auto impl = std::make_shared<Impl>(std::move(options), std::move(factory));
  try {
    absl::Status st = impl->Listen();
    if (!st.ok()) return st;
    impl->StartThreads();
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("http: cannot start: ") + e.what());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::string HttpServer::listen_url() const {
  return "http://" + impl_->host_for_url() + ":" + std::to_string(impl_->port()) +
         impl_->opts().path;
}

uint16_t HttpServer::port() const { return impl_->port(); }

HttpServerStats HttpServer::stats() const {
  HttpServerStats s;
  s.connections_open = impl_->connections_open.load();
  s.sessions_open = impl_->sessions_open();
  s.requests_total = impl_->requests_total.load();
  return s;
}

void HttpServer::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace contextd::transport
