#include "transport/upstream_http_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <optional>

#include "base/foreign_text.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"
#include "transport/sse_reader.h"
#include "transport/internal/tls_client.h"

namespace contextd::transport {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Sets what every request of a channel carries, after the request's own headers: Host, the MCP
// session headers once known, User-Agent, and last the configured headers.
void SetChannelHeaders(http::fields& fields, const HttpUrl& url, const std::string& session_id,
                       const std::string& protocol_version,
                       const std::map<std::string, std::string>& configured) {
  fields.set(http::field::host, url.host + ":" + url.port);
  if (!session_id.empty()) fields.set("Mcp-Session-Id", session_id);
  if (!protocol_version.empty()) fields.set("MCP-Protocol-Version", protocol_version);
  fields.set(http::field::user_agent, "contextd-gateway");
  for (const auto& [k, v] : configured) fields.set(k, v);
}

// The method of a serialized JSON-RPC message ("" for responses and unparseable text).
std::string MethodOf(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("method") || !json["method"].is_string()) return {};
  return json["method"].get<std::string>();
}

}  // namespace

struct UpstreamHttpChannel::Tls {
  ssl::context context{ssl::context::tls_client};
};

// One connection. The socket's fd is in active_fds_ from before connect until destruction, so
// Close can abort a connect, a handshake or a read in flight.
class UpstreamHttpChannel::Connection {
 public:
  explicit Connection(UpstreamHttpChannel& channel) : channel_(channel) {}
  ~Connection() { Unregister(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

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
  // Registers the (open) socket; false when the channel is already closed.
  bool Register() {
    std::lock_guard<std::mutex> lock(channel_.mu_);
    if (channel_.closed_) return false;
    fd_ = socket().native_handle();
    channel_.active_fds_.insert(fd_);
    return true;
  }
  void Unregister() {
    if (fd_ < 0) return;
    std::lock_guard<std::mutex> lock(channel_.mu_);
    channel_.active_fds_.erase(fd_);
    fd_ = -1;
  }

  net::io_context ioc;
  std::optional<tcp::socket> plain;
  std::optional<ssl::stream<tcp::socket>> tls;

 private:
  UpstreamHttpChannel& channel_;
  int fd_ = -1;
};

absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> UpstreamHttpChannel::Start(
    UpstreamHttpOptions options, UpstreamCallbacks callbacks) {
  auto url = ParseHttpUrl(options.url);
  if (!url.ok()) return url.status();
  std::shared_ptr<Tls> tls;
  if (url->tls) {
    tls = std::make_shared<Tls>();
    absl::Status configured = internal::ConfigureTlsClientContext(tls->context, options.ca_file);
    if (!configured.ok()) return configured;
  } else if (!options.ca_file.empty()) {
    return absl::InvalidArgumentError("ca_file applies only to https upstream urls");
  }
  return std::unique_ptr<UpstreamHttpChannel>(new UpstreamHttpChannel(
      std::move(options), std::move(url).value(), std::move(callbacks), std::move(tls)));
}

UpstreamHttpChannel::UpstreamHttpChannel(UpstreamHttpOptions options, HttpUrl url,
                                         UpstreamCallbacks callbacks, std::shared_ptr<Tls> tls)
    : options_(std::move(options)),
      url_(std::move(url)),
      callbacks_(std::move(callbacks)),
      tls_(std::move(tls)) {}

UpstreamHttpChannel::~UpstreamHttpChannel() { Close(); }

absl::Status UpstreamHttpChannel::Send(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return absl::UnavailableError("upstream connection is closed");
  // Reap finished workers so that the list stays short.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::string body(line);
  workers_.push_back(Worker{std::thread([this, body = std::move(body), done]() mutable {
                              // A request that failed inside gets an error answer, not none.
                              if (!base::RunCatching("upstream", [&] { Post(body); })) {
                                FailRequest(body, "contextd: internal error sending the request");
                              }
                              done->store(true);
                            }),
                            done});
  return absl::OkStatus();
}

void UpstreamHttpChannel::Close(int /*grace_ms*/) {
  std::list<Worker> workers;
  std::thread stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    close_reported_ = true;  // the owner closed it: nothing to report
    for (int fd : active_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
    stream.swap(stream_thread_);
  }
  closed_cv_.notify_all();
  for (auto& w : workers) w.thread.join();
  if (stream.joinable()) stream.join();
}

void UpstreamHttpChannel::Deliver(std::string message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (protocol_version_.empty()) {
      auto json = nlohmann::json::parse(message, nullptr, false);
      if (json.is_object() && json.contains("result") && json["result"].is_object() &&
          json["result"].contains("protocolVersion") &&
          json["result"]["protocolVersion"].is_string()) {
        protocol_version_ = json["result"]["protocolVersion"].get<std::string>();
      }
    }
  }
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_line) callbacks_.on_line(std::move(message));
}

void UpstreamHttpChannel::FailRequest(const std::string& body, const std::string& why) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("id") || !json.contains("method")) return;
  nlohmann::json error = {{"jsonrpc", "2.0"},
                          {"id", json["id"]},
                          {"error", {{"code", -32603}, {"message", why}}}};
  Deliver(base::DumpJson(error));
}

void UpstreamHttpChannel::Closed(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    if (close_reported_) return;
    close_reported_ = true;
  }
  closed_cv_.notify_all();
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_closed) callbacks_.on_closed(reason);
}

absl::Status UpstreamHttpChannel::Connect(Connection& c) {
  tcp::resolver resolver(c.ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(url_.host, url_.port, ec);
  if (tls_) {
    c.tls.emplace(c.ioc, tls_->context);
  } else {
    c.plain.emplace(c.ioc);
  }
  if (!ec) {
    ec = net::error::host_not_found;
    for (const auto& entry : endpoints) {
      tcp::socket& socket = c.socket();
      beast::error_code ignored;
      socket.close(ignored);
      c.Unregister();
      socket.open(entry.endpoint().protocol(), ec);
      if (ec) continue;
      if (!c.Register()) return absl::UnavailableError("upstream connection is closed");
      socket.connect(entry.endpoint(), ec);
      if (!ec) break;
    }
  }
  if (ec) {
    return absl::UnavailableError(
        base::StrCat("cannot connect to ", options_.url, ": ", ec.message()));
  }
  if (!tls_) return absl::OkStatus();
  SSL* ssl_handle = c.tls->native_handle();
  absl::Status named = internal::SetTlsPeerName(ssl_handle, url_.host);
  if (!named.ok()) return named;
  c.tls->handshake(ssl::stream_base::client, ec);
  if (ec) return internal::TlsHandshakeError(ssl_handle, ec, url_.host, url_.port);
  return absl::OkStatus();
}

void UpstreamHttpChannel::Post(std::string body) {
  Connection connection(*this);
  absl::Status connected = Connect(connection);
  if (!connected.ok()) {
    // The channel ends; the upstream client fails every request in flight with the reason.
    Closed(std::string(connected.message()));
    return;
  }
  // Only "notifications/initialized" matters here: most bodies (tool arguments can be large)
  // are not parsed for it.
  const bool initialized = body.find("notifications/initialized") != std::string::npos &&
                           MethodOf(body) == "notifications/initialized";
  http::request<http::string_body> request{http::verb::post, url_.target, 11};
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  {
    std::lock_guard<std::mutex> lock(mu_);
    SetChannelHeaders(request, url_, session_id_, protocol_version_, options_.headers);
  }
  request.body() = body;
  request.prepare_payload();

  beast::error_code ec;
  unsigned status = 0;
  bool sse = false;
  bool too_big = false;
  std::string pending;  // a JSON body
  SseReader reader(options_.max_message_bytes);
  auto deliver = [this](std::string data) { Deliver(std::move(data)); };
  bool header_failed = false;
  bool body_failed = false;
  connection.Use([&](auto& stream) {
    http::write(stream, request, ec);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // own limit below
    if (!ec) http::read_header(stream, buffer, parser, ec);
    if (ec) {
      header_failed = true;
      return;
    }
    const auto& head = parser.get();
    status = head.result_int();
    auto sid = head.find("Mcp-Session-Id");
    if (sid != head.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_ = std::string(sid->value());
    }
    std::string content_type = Lower(std::string(head[http::field::content_type]));
    sse = content_type.find("text/event-stream") != std::string::npos;
    // Reads the body chunk by chunk; SSE events are delivered as they complete. A JSON body is
    // bounded as a whole; an SSE answer per event (by the reader), since a long call may send
    // many progress events before its result.
    size_t total = 0;
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      // read_some: progress events are handed on as they arrive, not when the buffer is full.
      http::read_some(stream, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      size_t got = sizeof chunk - parser.get().body().size;
      total += got;
      if (!sse && total > options_.max_message_bytes) {
        too_big = true;  // no need to read the rest (it may never end)
        pending.clear();
        break;
      }
      if (!too_big && sse) {
        reader.Feed(std::string_view(chunk, got), deliver);
      } else if (!too_big) {
        pending.append(chunk, got);
      }
      if (ec) break;
    }
    body_failed = !parser.is_done();
  });
  if (header_failed) {
    std::string why = base::StrCat("upstream connection failed: ", ec.message());
    FailRequest(body, why);
    Closed(why);
    return;
  }
  if (status == 404) {
    std::string why = "upstream session expired (HTTP 404)";
    FailRequest(body, why);
    Closed(why);
    return;
  }
  if (status >= 400) {
    FailRequest(body, base::StrCat("upstream answered HTTP ", status));
    return;
  }
  if (too_big) {
    FailRequest(body, base::StrCat("upstream answer larger than ", options_.max_message_bytes,
                                   " bytes"));
    return;
  }
  if (body_failed) {
    // Cut off: a request still waiting for its answer fails now instead of at its timeout.
    FailRequest(body, base::StrCat("upstream connection failed: ", ec.message()));
    return;
  }
  if (sse) {
    reader.Finish(deliver);
    if (reader.dropped() > 0) {
      // An event over the limit may have been the answer: fail the request now rather than at
      // its timeout (if the answer did arrive, the client ignores this late error).
      FailRequest(body, base::StrCat("upstream answer event larger than ",
                                     options_.max_message_bytes, " bytes"));
    }
  } else if (!pending.empty()) {
    Deliver(std::move(pending));
  }
  if (initialized) StartStream();
}

void UpstreamHttpChannel::StartStream() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || stream_started_) return;
  stream_started_ = true;
  stream_thread_ =
      std::thread([this] { base::RunLoopCatching("upstream", [this] { StreamLoop(); }); });
}

void UpstreamHttpChannel::StreamLoop() {
  std::string last_event_id;
  std::chrono::milliseconds delay = options_.stream_retry_initial;
  for (;;) {
    std::string why;
    switch (ReadStream(last_event_id, delay, why)) {
      case StreamEnd::kClosed:
        return;
      case StreamEnd::kNotOffered:
        base::LogInfo(base::StrCat("upstream ", options_.log_name,
                                   ": no standalone GET stream offered (HTTP 405)"));
        return;
      case StreamEnd::kGone:
        Closed(why);
        return;
      case StreamEnd::kDropped:
        break;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_cv_.wait_for(lock, delay, [this] { return closed_; })) return;
    delay = std::min(options_.stream_retry_max, delay * 2);
  }
}

UpstreamHttpChannel::StreamEnd UpstreamHttpChannel::ReadStream(std::string& last_event_id,
                                                               std::chrono::milliseconds& delay,
                                                               std::string& why) {
  Connection connection(*this);
  absl::Status connected = Connect(connection);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return StreamEnd::kClosed;
  }
  if (!connected.ok()) {
    // Refused or untrusted: the upstream is down (or replaced); the client restarts it.
    why = std::string(connected.message());
    return StreamEnd::kGone;
  }
  http::request<http::empty_body> request{http::verb::get, url_.target, 11};
  request.set(http::field::accept, "text/event-stream");
  if (!last_event_id.empty()) request.set("Last-Event-ID", last_event_id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    SetChannelHeaders(request, url_, session_id_, protocol_version_, options_.headers);
  }

  StreamEnd end = StreamEnd::kDropped;
  SseReader reader(options_.max_message_bytes);
  connection.Use([&](auto& stream) {
    beast::error_code ec;
    http::write(stream, request, ec);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // a stream has no length
    if (!ec) http::read_header(stream, buffer, parser, ec);
    if (ec) return;  // dropped before an answer: try again
    unsigned status = parser.get().result_int();
    if (status == 405) {
      end = StreamEnd::kNotOffered;
      return;
    }
    if (status == 404) {
      why = "upstream session expired (HTTP 404 on the GET stream)";
      end = StreamEnd::kGone;
      return;
    }
    std::string content_type = Lower(std::string(parser.get()[http::field::content_type]));
    if (status != 200 || content_type.find("text/event-stream") == std::string::npos) {
      // 409 (the server still holds the old stream), 5xx, ...: try again later.
      base::LogWarn(base::StrCat("upstream ", options_.log_name, ": GET stream answered HTTP ",
                                 status, " ", content_type));
      return;
    }
    char chunk[16384];
    int64_t dropped = 0;
    bool delivered = false;
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      // read_some: an event is handed on as soon as it arrives, not when the buffer is full.
      http::read_some(stream, buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      size_t got = sizeof chunk - parser.get().body().size;
      reader.Feed(std::string_view(chunk, got), [&](std::string data) {
        delivered = true;
        Deliver(std::move(data));
      });
      // The backoff restarts only once the stream delivered something: a server that answers
      // 200 and closes at once is retried with a growing delay, not every stream_retry_initial.
      if (delivered) delay = options_.stream_retry_initial;
      if (!reader.last_event_id().empty()) last_event_id = reader.last_event_id();
      if (reader.retry_ms()) {
        // The server's say, within our bounds: "retry: 0" must not make a reconnect loop spin.
        delay = std::clamp(std::chrono::milliseconds(*reader.retry_ms()),
                           options_.stream_retry_initial, options_.stream_retry_max);
      }
      if (reader.dropped() != dropped) {
        dropped = reader.dropped();
        base::LogWarn(base::StrCat("upstream ", options_.log_name,
                                   ": dropped a GET stream event larger than ",
                                   options_.max_message_bytes, " bytes"));
      }
      if (ec) break;
    }
  });
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ ? StreamEnd::kClosed : end;
}

}  // namespace contextd::transport
