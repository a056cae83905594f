// HttpServer: one HTTP listener (Boost.Beast) with a route table. Its own routes: the MCP
// Streamable HTTP endpoint (spec 2025-11-25, also serving 2025-06-18 and 2025-03-26 clients: POST
// answered with JSON or an SSE stream, GET for the standalone stream or to resume a closed one,
// DELETE), GET /healthz and, when configured, GET /metrics; other rooms add theirs through
// HttpServerOptions::routes (see transport/http_route.h). Origin/Host allowlists (DNS rebinding),
// bearer tokens, size limits and timeouts guard every request.
// Thread-safe: I/O runs on `io_threads` threads; sinks and responders may be called from any
// thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "protocol/session.h"
#include "transport/http_route.h"
#include "transport/session_directory.h"

namespace contextd::transport {

// What GET /healthz answers when HttpServerOptions::health is set.
struct HealthAnswer {
  bool ready = true;
  std::string json;
};

// Configuration of HttpServer. Defaults are safe for a local, single-user server.
struct HttpServerOptions {
  // Address to bind (IPv4 or IPv6 literal) and port (0 picks a free port).
  std::string listen_address = "127.0.0.1";
  uint16_t port = 0;
  // Path of the MCP endpoint.
  std::string path = "/mcp";
  // Number of I/O threads.
  int io_threads = 2;

  // Allowed values of the Origin header when present, compared case-insensitively as
  // "scheme://host[:port]". An entry without a port allows every port. Empty: the loopback
  // origins http(s)://localhost, 127.0.0.1 and [::1], any port. A single "*" allows any origin.
  std::vector<std::string> allowed_origins;
  // Allowed Host header values ("name" or "name:port"; an entry without a port allows every
  // port). Empty: localhost, 127.0.0.1 and [::1], any port. A single "*" allows any host.
  std::vector<std::string> allowed_hosts;
  // Bearer token -> tenant. Empty: no authentication (every session has tenant "local").
  // Otherwise a missing or unknown token gets 401 with WWW-Authenticate.
  std::map<std::string, std::string> bearer_tokens;

  // Largest accepted request body (413 above) on routes without their own
  // HttpRoute::max_body_bytes (the MCP endpoint, /healthz, /metrics). Default 4 MiB.
  size_t max_message_bytes = 4u << 20;
  // Largest accepted request header block (431 above).
  size_t max_header_bytes = 16u << 10;
  // Time allowed from the first byte of a request until its headers are complete (slowloris);
  // the connection is closed when it passes.
  std::chrono::milliseconds header_timeout{10'000};
  // Time allowed to receive a request body once the headers are in.
  std::chrono::milliseconds body_timeout{30'000};
  // A keep-alive connection idle this long between requests is closed.
  std::chrono::milliseconds keep_alive_timeout{60'000};
  // A connection whose pending write (a response, SSE events) does not complete within this
  // time is closed (a client that stopped reading). Enforced by a per-connection watchdog, so
  // both limits may be exceeded by up to the smaller of the two.
  std::chrono::milliseconds write_timeout{30'000};
  // Longest wait for the engine's answer to a POST (the client then gets 504 or, on an SSE
  // stream, the stream ends). Zero: no limit.
  std::chrono::milliseconds request_timeout{0};
  // Interval of SSE keep-alive comments on GET streams (and long POST streams).
  std::chrono::milliseconds sse_keepalive_interval{15'000};
  // Connections above this number are closed right after accept.
  size_t max_connections = 10'000;
  // Sessions above this number: initialize gets 503.
  size_t max_sessions = 10'000;
  // A session with no request for this long and no open GET stream is closed (Session::Close).
  // Zero disables.
  std::chrono::milliseconds session_idle_timeout{30 * 60'000};
  // Sessions shared with other instances (decision 0025; null: this instance owns its sessions).
  // With a directory, a request naming an Mcp-Session-Id this instance does not hold is looked
  // up there (well-formed ids only, unknown ones remembered, at most 32 lookups in flight: a
  // flood of made-up ids cannot become a flood of queries) and continued if the session is open;
  // and a session held here is touched there (its last-seen time, which idle expiry on every
  // instance reads) at most once per `session_sync_interval`, when a request for it arrives and
  // by the idle sweep, which drops sessions that ended elsewhere. Must outlive the server's
  // I/O threads and every callback it has in flight.
  std::shared_ptr<SessionDirectory> session_directory;
  std::chrono::milliseconds session_sync_interval{2'000};
  // SSE events kept per session for Last-Event-ID resumption (of the standalone stream, and of
  // POST streams the engine closed before their answer: MessageSink::CloseStream), at most this
  // many and at most 8 MiB of them.
  size_t replay_events = 256;
  // The `retry:` (ms) sent with the event id that primes a POST stream for resumption.
  std::chrono::milliseconds sse_retry{1000};
  // After an error answered before the request was read to its end (413, 431, 400), the rest is
  // read and discarded, up to this many bytes and this long, before the connection closes: a
  // client still sending then reads the answer instead of a TCP reset.
  size_t lingering_close_bytes = 64u << 20;
  std::chrono::milliseconds lingering_close_timeout{5'000};
  // Protocol versions accepted in the MCP-Protocol-Version header.
  std::vector<std::string> supported_protocol_versions = {"2025-11-25", "2025-06-18", "2025-03-26"};
  // Optional GET /metrics body (Prometheus text format), called on an I/O thread; the listener's
  // own `contextd_http_*` counters are appended to it. Absent: /metrics is 404.
  std::function<std::string()> metrics;
  // Optional GET /healthz answer (called on an I/O thread): a JSON body, 200 when `ready`, 503
  // otherwise. Absent: 200 "ok" (text/plain).
  std::function<HealthAnswer()> health;
  // Further routes of the same listener (model gateway, viewer, ...), registered before Start.
  // The built-in paths (`path`, /healthz, /metrics when configured) take precedence; among the
  // rest an exact path wins over a prefix, and a longer prefix over a shorter one. Start returns
  // InvalidArgument for a route without a handler or whose path does not start with '/'.
  std::vector<HttpRoute> routes;
};

// Counters readable while the server runs (for /metrics and tests). A snapshot: the fields are
// read one by one while the server runs.
struct HttpServerStats {
  uint64_t connections_open = 0;
  uint64_t connections_accepted = 0;
  // Closed at accept: max_connections reached.
  uint64_t connections_rejected = 0;
  uint64_t sessions_open = 0;
  // Requests read completely (and those answered 413/431/400 before their end).
  uint64_t requests_total = 0;
  uint64_t payload_too_large = 0;  // 413
  uint64_t auth_failures = 0;      // 401
  uint64_t forbidden = 0;          // 403 for Host/Origin
  uint64_t bytes_received = 0;
  uint64_t bytes_sent = 0;
  // Connections closed because a write made no progress within write_timeout, or their client
  // fell 8 MiB behind.
  uint64_t slow_clients_closed = 0;
};

class HttpServer {
 public:
  // Binds, listens and starts the I/O threads. Returns InvalidArgument for a bad address, option
  // or route, Unavailable if the address cannot be bound. The factory is shared with the caller;
  // route handlers are owned by the server until it is destroyed.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      HttpServerOptions options, std::shared_ptr<protocol::SessionFactory> factory);

  // Stops (see Stop()).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "http://ADDR:PORT/mcp" (IPv6 addresses in brackets).
  std::string listen_url() const;
  // The bound port (the real one when 0 was requested).
  uint16_t port() const;
  // A snapshot of the counters.
  HttpServerStats stats() const;
  // The counters in Prometheus text format (`contextd_http_*`, requests by route and status
  // class), as appended to /metrics.
  std::string RenderMetrics() const;

  // Stops accepting, closes every session (Session::Close("server shutdown")) and connection,
  // and joins the I/O threads. Messages sent to sinks afterwards are dropped. Idempotent; must
  // not be called from an I/O thread.
  void Stop();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace contextd::transport
