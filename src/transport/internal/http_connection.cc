#include "transport/internal/http_connection.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "transport/internal/http_listener.h"
#include "transport/internal/raw_request.h"

namespace contextd::transport::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;

namespace {
constexpr size_t kMaxQueuedBytes = 8u << 20;        // a slower reader is disconnected
constexpr size_t kMaxStreamInputBytes = 64u << 10;  // read ahead while a stream is open

// Appends a route's headers, dropping any whose name or value would split the response (a route
// may relay headers it got from elsewhere).
void AppendHeaders(const HttpHeaders& headers, std::string* out) {
  for (const auto& [k, v] : headers) {
    if (k.empty() || k.find_first_of("\r\n:") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos) {
      base::LogWarn("http: dropped a response header containing CR or LF");
      continue;
    }
    out->append(k).append(": ").append(v).append("\r\n");
  }
}
}  // namespace

// One TCP connection: reads requests one at a time, hands each to its route, writes what the
// route's responder sends. All members are touched only on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Listener* srv, tcp::socket socket, Strand strand)
      : srv_(srv),
        strand_(std::move(strand)),
        stream_(std::move(socket)),
        timer_(strand_),
        watchdog_(strand_),
        link_(std::make_shared<ConnLink>()) {
    srv_->connections_open.fetch_add(1, std::memory_order_relaxed);
    srv_->Register(link_);
  }
  ~Connection() {
    srv_->Unregister(link_.get());
    srv_->connections_open.fetch_sub(1, std::memory_order_relaxed);
  }

  void Start() {
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    stream_.socket().non_blocking(true, ec);
    ArmWatchdog(std::chrono::steady_clock::now() +
                std::min<std::chrono::steady_clock::duration>(srv_->opts().keep_alive_timeout,
                                                              srv_->opts().write_timeout));
    DoRead();
  }

  bool OnStrand() const { return strand_.running_in_this_thread(); }
  const Strand& strand() const { return strand_; }

  // ---- The responder's calls (on the strand). `gen` names the exchange they belong to.

  bool ExchangeOpen(uint64_t gen) const {
    return gen == gen_ && (mode_ == Mode::kHandling || mode_ == Mode::kStreaming);
  }

  void RouteRespond(uint64_t gen, HttpResponse r) {
    if (gen != gen_ || mode_ != Mode::kHandling) return;
    WriteResponse(r.status, r.content_type, r.body, &r.headers, "", r.close, /*drain=*/false);
  }

  void RouteStartStream(uint64_t gen, int status, const std::string& content_type,
                        const HttpHeaders& headers) {
    if (gen != gen_ || mode_ != Mode::kHandling) return;
    std::string h = StatusLine(status);
    if (!content_type.empty()) h.append("Content-Type: ").append(content_type).append("\r\n");
    AppendHeaders(headers, &h);
    h += http10_ ? "Connection: close\r\n" : "Transfer-Encoding: chunked\r\n";
    h += "\r\n";
    srv_->CountResponse(route_, status);
    mode_ = Mode::kStreaming;
    QueueRaw(std::move(h));
  }

  void RouteWrite(uint64_t gen, std::string_view data, std::function<void(bool)> written) {
    if (gen != gen_ || mode_ != Mode::kStreaming) {
      if (written) written(false);
      return;
    }
    if (data.empty()) {  // an empty chunk would end the body
      if (written) written(true);
      return;
    }
    QueueRaw(http10_ ? std::string(data) : ChunkOf(data));
    if (written && mode_ != Mode::kClosed) {
      written_.emplace_back(queued_total_, std::move(written));
    } else if (written) {
      written(false);
    }
  }

  void RouteEnd(uint64_t gen, bool close) {
    if (gen != gen_ || mode_ != Mode::kStreaming) return;
    mode_ = Mode::kResponding;
    EndExchange();
    if (!http10_) QueueRaw("0\r\n\r\n");
    after_ = http10_ || close || !keep_alive_ ? After::kClose : After::kReadNext;
    MaybeAfterWrite();
  }

  void RouteAbort(uint64_t gen) {
    if (gen != gen_) return;
    if (mode_ == Mode::kHandling) {
      // No answer was started: the client sees the connection close.
      on_gone_ = nullptr;
      return Close();
    }
    if (mode_ != Mode::kStreaming) return;
    mode_ = Mode::kResponding;
    EndExchange();
    after_ = After::kClose;  // what was queued is sent; no last chunk
    MaybeAfterWrite();
  }

  void RouteRunAfter(uint64_t gen, std::chrono::milliseconds delay, std::function<void()> fn) {
    if (!ExchangeOpen(gen)) return;
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this(), gen, fn = std::move(fn)](beast::error_code ec) {
      if (ec || !self->ExchangeOpen(gen)) return;
      self->RunRouteTask(fn);
    });
  }

  void RouteCancelTimer(uint64_t gen) {
    if (ExchangeOpen(gen)) timer_.cancel();
  }

  void RouteAbandoned(uint64_t gen) {
    if (gen != gen_) return;
    if (mode_ == Mode::kHandling) {
      base::LogWarn("http: a route released its responder without answering");
      Refuse(route_, 500, "internal error: the request was not answered", "", false);
    } else if (mode_ == Mode::kStreaming) {
      Close();  // an unfinished body must not look complete
    }
  }

  void RouteOnGone(uint64_t gen, std::function<void()> fn) {
    if (ExchangeOpen(gen)) on_gone_ = std::move(fn);
  }

  // Runs work a route posted to this connection's thread. A throw is reported (where="http")
  // and answered as a throwing handler is.
  void RunRouteTask(const std::function<void()>& fn) {
    if (!base::RunCatching("http", fn)) AnswerFailedRoute();
  }

 private:
  // kHandling: a route owns the request and has not answered; kStreaming: its streamed response
  // is open; kResponding: the last bytes are queued; kDraining: lingering close.
  enum class Mode { kReading, kHandling, kStreaming, kResponding, kDraining, kClosed };
  enum class After { kNone, kReadNext, kClose, kDrain };

  // ---- Reading requests.

  void DoRead() {
    mode_ = Mode::kReading;
    ++gen_;
    route_ = nullptr;
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
    watchdog_.expires_at(when);
    watchdog_.async_wait([self = shared_from_this()](beast::error_code ec) {
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
      srv_->slow_clients_closed.fetch_add(1, std::memory_order_relaxed);
      return Close();
    }
    auto next = now + std::min<std::chrono::steady_clock::duration>(ka, wt);
    if (idle) next = std::min(next, idle_since_ + ka);
    if (writing_) next = std::min(next, write_started_ + wt);
    ArmWatchdog(next);
  }

  // Reads whatever the client sends while no request is being parsed: the first bytes of the
  // next request, or EOF/reset, which tells an open exchange that the client left.
  void StartWatch() {
    watch_pending_ = true;
    // Wait for readability first: a speculative read right after a response would almost
    // always find nothing (one wasted syscall per request).
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code ec) {
                                  self->watch_pending_ = false;
                                  self->OnWatch(ec);
                                });
  }

  void OnWatch(beast::error_code ec) {
    if (mode_ == Mode::kClosed || mode_ == Mode::kDraining) return;
    if (ec) return Close();
    const size_t n = stream_.socket().read_some(buffer_.prepare(8192), ec);
    const bool watching =
        mode_ == Mode::kReading || mode_ == Mode::kHandling || mode_ == Mode::kStreaming;
    if (ec == net::error::would_block || ec == net::error::try_again) {
      if (watching) StartWatch();
      return;
    }
    if (ec) return Close();
    buffer_.commit(n);
    srv_->bytes_received.fetch_add(n, std::memory_order_relaxed);
    switch (mode_) {
      case Mode::kReading:
        awaiting_first_byte_ = false;
        DoReadHeader();
        break;
      case Mode::kStreaming:
        // Keep detecting the client's end while a stream is open, reading ahead within bounds
        // (a pipelined request waits in the buffer, the rest in the kernel).
        if (buffer_.size() <= kMaxStreamInputBytes) StartWatch();
        break;
      default:
        // A pipelined request: kept in the buffer for DoRead.
        break;
    }
  }

  void DoReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_->opts().max_header_bytes));
    // The route, and so its body limit, is known once the headers are in: until then the
    // largest limit of any route applies, and the parser stops after the headers (not eager).
    parser_->body_limit(srv_->max_body_limit());
    parser_->eager(false);
    // Fast path: the whole request is usually in the buffer already; parse it without any
    // asynchronous operation (and without arming a timeout).
    beast::error_code ec;
    ParseBuffered(ec);
    if (ec) return OnReadError(ec);
    if (parser_->is_header_done()) return OnHeader({});
    ArmReadDeadline(srv_->opts().header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code e, size_t n) {
                              self->srv_->bytes_received.fetch_add(n, std::memory_order_relaxed);
                              self->OnHeader(e);
                            });
  }

  // Feeds the buffered bytes to the parser until it needs more or stops (after the headers, when
  // not eager; at the end of the message).
  void ParseBuffered(beast::error_code& ec) {
    while (buffer_.size() > 0 && !parser_->is_done()) {
      const size_t used = parser_->put(buffer_.data(), ec);
      if (ec == http::error::need_more) {
        ec = {};
        buffer_.consume(used);
        return;
      }
      if (ec) return;
      buffer_.consume(used);
      if (used == 0 || (!parser_->eager() && parser_->is_header_done())) return;
    }
  }

  // The body limit of the route `target` goes to (HttpRoute::max_body_bytes, or the default).
  size_t BodyLimitFor(beast::string_view target) {
    std::string_view t(target.data(), target.size());
    return srv_->BodyLimit(srv_->Match(t.substr(0, t.find('?'))));
  }

  // A request that is not read in full within `limit` gets 408 in its route's shape. The stream's
  // own timeout would close the socket before an answer could be written, so this timer cancels
  // the read instead (OnReadError answers).
  void ArmReadDeadline(std::chrono::milliseconds limit) {
    timer_.expires_after(limit);
    timer_.async_wait([self = shared_from_this(), gen = gen_](beast::error_code ec) {
      if (ec || gen != self->gen_ || self->mode_ != Mode::kReading) return;
      self->read_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void OnHeader(beast::error_code ec) {
    timer_.cancel();
    if (ec) return OnReadError(ec);
    const size_t limit = BodyLimitFor(parser_->get().target());
    const auto length = parser_->content_length();
    if (length && *length > limit) return OnReadError(http::error::body_limit);
    parser_->body_limit(limit);  // a chunked body counts against it as it arrives
    parser_->eager(true);
    if (!parser_->is_done()) {
      ParseBuffered(ec);
      if (ec) return OnReadError(ec);
    }
    if (parser_->is_done()) return OnBody({});
    // curl and others wait for "100 Continue" before sending a larger body.
    auto expect = parser_->get().find(http::field::expect);
    if (expect != parser_->get().end() &&
        beast::iequals(expect->value(), beast::string_view("100-continue"))) {
      QueueRaw("HTTP/1.1 100 Continue\r\n\r\n");
    }
    ArmReadDeadline(srv_->opts().body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, size_t n) {
                       self->srv_->bytes_received.fetch_add(n, std::memory_order_relaxed);
                       self->OnBody(e);
                     });
  }

  void OnBody(beast::error_code ec) {
    timer_.cancel();
    if (ec) return OnReadError(ec);
    srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
    auto raw = std::make_unique<RawRequest>();
    raw->msg = parser_->release();
    parser_.reset();
    Dispatch(std::move(raw));
  }

  void OnReadError(beast::error_code ec) {
    const bool started = parser_ && parser_->got_some();
    const bool timed_out = std::exchange(read_timed_out_, false);
    if (parser_ && parser_->is_header_done()) {
      keep_alive_ = false;
      http10_ = parser_->get().version() < 11;
      head_ = parser_->get().method() == http::verb::head;
    } else {
      http10_ = false;
      head_ = false;
    }
    if (ec == http::error::header_limit) {
      srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
      return Refuse(RouteOfRefused(), 431, "request header fields too large", "", /*drain=*/true);
    }
    if (ec == http::error::body_limit) {
      srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
      srv_->payload_too_large.fetch_add(1, std::memory_order_relaxed);
      // The request line is parsed (a declared length over every route's limit fails as the
      // headers end, before is_header_done()).
      const size_t limit =
          parser_ ? BodyLimitFor(parser_->get().target()) : srv_->opts().max_message_bytes;
      return Refuse(RouteOfRefused(), 413, "message exceeds " + std::to_string(limit) + " bytes",
                    "", /*drain=*/true);
    }
    if (timed_out && started && ec == net::error::operation_aborted) {
      // Part of a request came, the rest did not in time: answered, then closed (not drained:
      // the client has stopped sending).
      srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      return Refuse(RouteOfRefused(), 408, "request not received in time", "", /*drain=*/false);
    }
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted ||
        ec == http::error::partial_message || !started) {
      return Close();
    }
    // Malformed HTTP.
    srv_->requests_total.fetch_add(1, std::memory_order_relaxed);
    Refuse(RouteOfRefused(), 400, "malformed HTTP request: " + ec.message(), "", /*drain=*/true);
  }

  // The route a request refused while it was being read was meant for: by its parsed target, or
  // by the raw request line (a header block over the limit is refused before it is parsed).
  // nullptr when it names none.
  const RouteEntry* RouteOfRefused() {
    std::string_view target;
    if (parser_) target = {parser_->get().target().data(), parser_->get().target().size()};
    if (target.empty()) {
      target = RequestLineTarget(
          {static_cast<const char*>(buffer_.data().data()), buffer_.data().size()});
    }
    if (target.empty()) return nullptr;
    return srv_->Match(target.substr(0, target.find('?')));
  }

  // ---- Dispatch.

  void Dispatch(std::unique_ptr<RawRequest> raw) {
    const auto& msg = raw->msg;
    keep_alive_ = msg.keep_alive();
    http10_ = msg.version() < 11;
    head_ = msg.method() == http::verb::head;
    std::string_view target(msg.target().data(), msg.target().size());
    std::string_view path = target.substr(0, target.find('?'));
    RouteEntry* entry = srv_->Match(path);
    route_ = entry;
    auto header = [&msg](http::field f) -> std::string_view {
      auto it = msg.find(f);
      if (it == msg.end()) return {};
      return {it->value().data(), it->value().size()};
    };
    if (entry == nullptr || entry->route.check_host_and_origin) {
      if (!srv_->host_policy().HostAllowed(header(http::field::host))) {
        srv_->forbidden.fetch_add(1, std::memory_order_relaxed);
        return Refuse(entry, 403, "forbidden: Host not allowed", "", false);
      }
      if (msg.find(http::field::origin) != msg.end() &&
          !srv_->host_policy().OriginAllowed(header(http::field::origin))) {
        srv_->forbidden.fetch_add(1, std::memory_order_relaxed);
        return Refuse(entry, 403, "forbidden: Origin not allowed", "", false);
      }
    }
    if (entry == nullptr) return Refuse(nullptr, 404, "not found", "", false);
    std::string tenant;
    if (entry->route.auth == RouteAuth::kBearer) {
      std::optional<std::string> t = srv_->Authenticate(header(http::field::authorization));
      if (!t) {
        srv_->auth_failures.fetch_add(1, std::memory_order_relaxed);
        std::string www = "WWW-Authenticate: Bearer realm=\"contextd\"";
        if (msg.find(http::field::authorization) != msg.end()) {
          www += ", error=\"invalid_token\"";
        }
        www += "\r\n";
        return Refuse(entry, 401, "unauthorized", www, false);
      }
      tenant = std::move(*t);
    }
    if (!entry->route.methods.empty()) {
      std::string_view m(msg.method_string().data(), msg.method_string().size());
      if (std::find(entry->route.methods.begin(), entry->route.methods.end(), m) ==
          entry->route.methods.end()) {
        return Refuse(entry, 405, "method not allowed",
                      "Allow: " + Listener::AllowOf(*entry) + "\r\n", false);
      }
    }
    // The exchange is open: the responder reaches this connection through the link.
    mode_ = Mode::kHandling;
    {
      std::lock_guard<std::mutex> lock(link_->mu);
      link_->conn = shared_from_this();
      link_->gen = gen_;
    }
    auto responder = std::make_shared<ConnResponder>(link_, gen_);
    // A handler that throws is reported (where="http") and its request answered 500.
    if (!base::RunCatching("http", [&] {
          entry->route.handler(HttpRequest(std::move(raw), std::move(tenant)),
                               std::move(responder));
        })) {
      AnswerFailedRoute();
    }
    // While the route works, a read watch tells it when the client leaves.
    if ((mode_ == Mode::kHandling || mode_ == Mode::kStreaming) && !watch_pending_ &&
        buffer_.size() == 0) {
      StartWatch();
    }
  }

  // Ends the open exchange: responders can no longer reach this connection.
  void EndExchange() {
    timer_.cancel();
    // Released after the link is cut and its lock let go, in this order: the route's state
    // (whose responders then find the exchange ended), then the link's hold on this connection
    // (an entry point holds `this` too).
    std::shared_ptr<Connection> held;
    std::function<void()> gone = std::move(on_gone_);
    on_gone_ = nullptr;
    std::lock_guard<std::mutex> lock(link_->mu);
    if (link_->gen == gen_) held = std::move(link_->conn);
  }

  // ---- Writing.

  static std::string StatusLine(int status) {
    std::string out = "HTTP/1.1 ";
    out += std::to_string(status);
    out += ' ';
    out += StatusText(status);
    out += "\r\n";
    return out;
  }

  // The answer to a route whose handler (or work it posted here) threw: 500 in the route's
  // protocol before a response started, a closed connection mid-stream.
  void AnswerFailedRoute() {
    if (mode_ == Mode::kHandling) Refuse(route_, 500, "internal error", "", false);
    if (mode_ == Mode::kStreaming) Close();
  }

  // The listener's own refusal of a request meant for `entry` (nullptr: none): in the route's
  // protocol when it has an error shape (the model API's error object), else a JSON-RPC error.
  // `raw_headers` (WWW-Authenticate, Allow) are kept either way; `drain` closes after a lingering
  // read of what the client still sends. A shape that throws falls back to JSON-RPC.
  void Refuse(const RouteEntry* entry, int status, std::string_view message,
              std::string_view raw_headers, bool drain) {
    HttpResponse r;
    if (entry != nullptr && entry->route.error_response &&
        base::RunCatching("http", [&] { r = entry->route.error_response(status, message); })) {
      return WriteResponse(r.status, r.content_type, r.body, &r.headers, raw_headers,
                           drain || r.close, drain);
    }
    const int code = status == 404 || status == 401 ? -32001 : -32000;
    WriteResponse(status, "application/json", ErrorBody(code, message), nullptr, raw_headers, drain,
                  drain);
  }

  // Writes a complete response; then reads the next request, closes, or drains then closes.
  void WriteResponse(int status, std::string_view content_type, std::string_view body,
                     const HttpHeaders* headers, std::string_view raw_headers, bool close,
                     bool drain) {
    if (mode_ == Mode::kClosed || mode_ == Mode::kDraining) return;
    const bool had_exchange = mode_ == Mode::kHandling || mode_ == Mode::kStreaming;
    mode_ = Mode::kResponding;
    if (had_exchange) EndExchange();
    if (!keep_alive_) close = true;
    std::string out;
    out.reserve(body.size() + 160);
    out += StatusLine(status);
    if (!content_type.empty()) {
      out += "Content-Type: ";
      out += content_type;
      out += "\r\n";
    }
    out += "Content-Length: ";
    out += std::to_string(body.size());
    out += "\r\n";
    if (headers != nullptr) AppendHeaders(*headers, &out);
    out += raw_headers;
    if (close) {
      out += "Connection: close\r\n";
    } else if (http10_) {
      out += "Connection: keep-alive\r\n";
    }
    out += "\r\n";
    if (!head_) out += body;
    srv_->CountResponse(route_, status);
    QueueRaw(std::move(out));
    after_ = drain ? After::kDrain : close ? After::kClose : After::kReadNext;
    MaybeAfterWrite();
  }

  void QueueRaw(std::string bytes) {
    if (mode_ == Mode::kClosed) return;
    queued_bytes_ += bytes.size();
    queued_total_ += bytes.size();
    out_queue_.push_back(std::move(bytes));
    if (queued_bytes_ > kMaxQueuedBytes) {
      base::LogWarn("http: closing a connection whose client does not read its stream");
      srv_->slow_clients_closed.fetch_add(1, std::memory_order_relaxed);
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
      self->OnWritten(ec, n);
    });
  }

  void OnWritten(beast::error_code ec, size_t n) {
    writing_ = false;
    queued_bytes_ -= std::min(queued_bytes_, n);
    sent_total_ += n;
    srv_->bytes_sent.fetch_add(n, std::memory_order_relaxed);
    if (ec) return Close();
    while (!written_.empty() && written_.front().first <= sent_total_) {
      auto cb = std::move(written_.front().second);
      written_.pop_front();
      cb(true);
      if (mode_ == Mode::kClosed) return;
    }
    if (!out_queue_.empty()) return DoWrite();
    MaybeAfterWrite();
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
    } else if (after == After::kDrain) {
      StartDrain();
    }
  }

  // Lingering close: the answer is out; read and discard what the client still sends (it may be
  // writing the rest of a body we refused), so that closing does not reset the connection and
  // destroy the answer in the client's receive buffer. Bounded in bytes and time.
  void StartDrain() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    mode_ = Mode::kDraining;
    drained_ = buffer_.size();
    buffer_.consume(buffer_.size());
    timer_.expires_after(srv_->opts().lingering_close_timeout);
    timer_.async_wait([self = shared_from_this()](beast::error_code e) {
      if (!e) self->Close();
    });
    DrainSome();
  }

  void DrainSome() {
    if (mode_ != Mode::kDraining) return;
    if (drained_ >= srv_->opts().lingering_close_bytes) return Close();
    stream_.socket().async_read_some(
        buffer_.prepare(64u << 10), [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->drained_ += n;
          self->srv_->bytes_received.fetch_add(n, std::memory_order_relaxed);
          if (ec == net::error::would_block || ec == net::error::try_again) {
            return self->stream_.socket().async_wait(tcp::socket::wait_read,
                                                     [self](beast::error_code e) {
                                                       if (e) return self->Close();
                                                       self->DrainSome();
                                                     });
          }
          if (ec) return self->Close();  // EOF: the client has read the answer and left
          self->DrainSome();
        });
  }

  void Close() {
    if (mode_ == Mode::kClosed) return;
    std::function<void()> gone;
    if (mode_ == Mode::kHandling || mode_ == Mode::kStreaming) {
      gone = std::move(on_gone_);
      EndExchange();
    }
    mode_ = Mode::kClosed;
    timer_.cancel();
    watchdog_.cancel();
    beast::error_code ec;
    stream_.socket().close(ec);
    out_queue_.clear();
    auto written = std::move(written_);
    written_.clear();
    for (auto& [at, cb] : written) cb(false);
    if (gone) base::RunCatching("http", gone);
  }

  // The HttpResponder of one exchange (any thread).
  class ConnResponder final : public HttpResponder {
   public:
    ConnResponder(std::shared_ptr<ConnLink> link, uint64_t gen)
        : link_(std::move(link)), gen_(gen) {}
    // Released before its answer ended: the client gets a 500 (or, mid-stream, a closed
    // connection) instead of waiting.
    ~ConnResponder() override {
      Run([](Connection& c, uint64_t gen) { c.RouteAbandoned(gen); }, /*allow_inline=*/false);
    }

    void Respond(HttpResponse response) override {
      Run([r = std::move(response)](Connection& c, uint64_t gen) mutable {
        c.RouteRespond(gen, std::move(r));
      });
    }
    void StartStream(int status, std::string content_type, HttpHeaders headers) override {
      Run([status, ct = std::move(content_type), h = std::move(headers)](
              Connection& c, uint64_t gen) { c.RouteStartStream(gen, status, ct, h); });
    }
    void Write(std::string data, std::function<void(bool)> written) override {
      // `written` stays out of the task's captures when the call cannot run.
      auto cb = std::make_shared<std::function<void(bool)>>(std::move(written));
      const bool sent = Run([d = std::move(data), cb](Connection& c, uint64_t gen) {
        c.RouteWrite(gen, d, std::move(*cb));
      });
      if (!sent && *cb) (*cb)(false);
    }
    void End(bool close_connection) override {
      Run([close_connection](Connection& c, uint64_t gen) { c.RouteEnd(gen, close_connection); });
    }
    void Abort() override {
      Run([](Connection& c, uint64_t gen) { c.RouteAbort(gen); });
    }
    void Post(std::function<void()> fn) override {
      Run(
          [fn = std::move(fn)](Connection& c, uint64_t gen) {
            if (c.ExchangeOpen(gen)) c.RunRouteTask(fn);
          },
          /*allow_inline=*/false);
    }
    void RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) override {
      Run([delay, fn = std::move(fn)](Connection& c, uint64_t gen) mutable {
        c.RouteRunAfter(gen, delay, std::move(fn));
      });
    }
    void CancelTimer() override {
      Run([](Connection& c, uint64_t gen) { c.RouteCancelTimer(gen); });
    }
    void OnClientGone(std::function<void()> fn) override {
      Run([fn = std::move(fn)](Connection& c, uint64_t gen) mutable {
        c.RouteOnGone(gen, std::move(fn));
      });
    }
    bool closed() const override {
      std::lock_guard<std::mutex> lock(link_->mu);
      return !link_->conn || link_->gen != gen_;
    }

   private:
    // Runs `f` on the connection's strand: at once when called there (and `allow_inline`), else
    // posted (under the link's lock, see ConnLink). False when the exchange is no longer reachable.
    template <typename F>
    bool Run(F&& f, bool allow_inline = true) {
      std::shared_ptr<Connection> here;
      {
        std::lock_guard<std::mutex> lock(link_->mu);
        if (!link_->conn || link_->gen != gen_) return false;
        if (!allow_inline || !link_->conn->OnStrand()) {
          net::post(link_->conn->strand(), [c = link_->conn, gen = gen_,
                                            f = std::forward<F>(f)]() mutable { f(*c, gen); });
          return true;
        }
        here = link_->conn;
      }
      f(*here, gen_);
      return true;
    }

    std::shared_ptr<ConnLink> link_;
    const uint64_t gen_;
  };

  Listener* srv_;
  Strand strand_;
  beast::tcp_stream stream_;
  net::steady_timer timer_;     // the route's RunAfter, or the lingering close deadline
  net::steady_timer watchdog_;  // keep-alive idle limit and write timeout
  std::shared_ptr<ConnLink> link_;
  std::chrono::steady_clock::time_point idle_since_;
  std::chrono::steady_clock::time_point write_started_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  RouteEntry* route_ = nullptr;
  std::function<void()> on_gone_;
  Mode mode_ = Mode::kReading;
  After after_ = After::kNone;
  uint64_t gen_ = 0;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_ = false;
  std::vector<std::string> out_queue_;
  std::vector<std::string> in_flight_;
  std::vector<net::const_buffer> bufs_;
  std::deque<std::pair<uint64_t, std::function<void(bool)>>> written_;  // at sent_total_ >= first
  size_t queued_bytes_ = 0;
  uint64_t queued_total_ = 0;
  uint64_t sent_total_ = 0;
  size_t drained_ = 0;
  bool writing_ = false;
  bool watch_pending_ = false;
  bool awaiting_first_byte_ = false;
  bool read_timed_out_ = false;  // ArmReadDeadline cancelled the read
};

void StartConnection(Listener* srv, tcp::socket socket, Strand strand) {
  auto conn = std::make_shared<Connection>(srv, std::move(socket), std::move(strand));
  // Started on its strand: the route's calls made there run inline.
  net::dispatch(conn->strand(), [conn] { conn->Start(); });
}

}  // namespace contextd::transport::internal
