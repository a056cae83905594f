// Listener: the one HTTP/1.1 listener of HttpServer. Owns the io_context, the I/O threads, the
// acceptor and every connection: request parsing with size limits and timeouts, keep-alive,
// Host/Origin checks, bearer auth -> tenant, dispatch through the route table, responses whole or
// streamed through HttpResponder, lingering close after early errors, and the counters.
// Thread-safe: Start/StopThreads/Finish from one controlling thread; the rest from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "boost/asio/io_context.hpp"
#include "transport/http_route.h"
#include "transport/http_server.h"
#include "transport/internal/http_util.h"

namespace contextd::transport::internal {

struct ConnLink;

// Status classes counted per route: 1xx .. 5xx.
constexpr int kStatusClasses = 5;

// One route of the table with its counters.
struct RouteEntry {
  HttpRoute route;
  std::atomic<uint64_t> responses[kStatusClasses] = {};
};

class Listener {
 public:
  // `routes` in precedence order (see HttpServerOptions::routes); each path checked by the caller.
  Listener(const HttpServerOptions& options, std::vector<HttpRoute> routes);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds and listens. InvalidArgument for a bad address, Unavailable if it cannot be bound.
  absl::Status Listen();
  // Starts accepting and the I/O threads.
  void Start();
  // Stops the io_context and joins the I/O threads; no handler runs afterwards. Idempotent.
  void StopThreads();
  // After StopThreads: cuts every responder from its connection (their calls become no-ops) and
  // destroys the connections, the acceptor and the io_context. Idempotent.
  void Finish();

  // The io_context (for timers of the routes; valid until Finish).
  boost::asio::io_context& ioc() { return *ioc_; }
  uint16_t port() const { return port_; }
  const std::string& host_for_url() const { return host_for_url_; }

  // Fills the listener's fields of `stats` (all but sessions_open).
  void FillStats(HttpServerStats* stats) const;
  // Appends the counters in Prometheus text format (`contextd_http_*`).
  void RenderMetrics(std::string* out) const;

  // ---- Used by the connections (the I/O threads).

  const HttpServerOptions& opts() const { return opts_; }
  const HostPolicy& host_policy() const { return host_policy_; }
  // The route for `path`, or nullptr.
  RouteEntry* Match(std::string_view path);
  // The largest request body `entry` accepts (nullptr: no route matched).
  size_t BodyLimit(const RouteEntry* entry) const {
    return entry != nullptr && entry->route.max_body_bytes != 0 ? entry->route.max_body_bytes
                                                                : opts_.max_message_bytes;
  }
  // The largest body any route accepts: the limit while a request's route is not yet known.
  size_t max_body_limit() const { return max_body_limit_; }
  // The Allow header value of `entry`'s methods.
  static std::string AllowOf(const RouteEntry& entry);
  // Tenant for an Authorization header value, or nullopt (401).
  std::optional<std::string> Authenticate(std::string_view authorization) const;
  // Counts a response of `status` on `entry` (nullptr: no route matched).
  void CountResponse(RouteEntry* entry, int status);
  // Registers / forgets a connection's link, so that Finish can cut it.
  void Register(const std::shared_ptr<ConnLink>& link);
  void Unregister(const ConnLink* link);

  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> requests_total{0};
  std::atomic<uint64_t> payload_too_large{0};
  std::atomic<uint64_t> auth_failures{0};
  std::atomic<uint64_t> forbidden{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> slow_clients_closed{0};

 private:
  void DoAccept();

  const HttpServerOptions& opts_;  // owned by HttpServer::Impl, which owns this
  HostPolicy host_policy_;
  std::vector<std::unique_ptr<RouteEntry>> routes_;
  RouteEntry unrouted_;  // responses to requests no route matched (404, 400, 413, ...)
  size_t max_body_limit_ = 0;

  uint16_t port_ = 0;
  std::string host_for_url_;

  std::mutex links_mu_;
  bool finished_ = false;
  std::unordered_map<const ConnLink*, std::weak_ptr<ConnLink>> links_;

  bool threads_stopped_ = false;
  std::vector<std::thread> threads_;
  // Destroyed explicitly in Finish(), before the members above (connections touch them).
  std::unique_ptr<boost::asio::io_context> ioc_;
  struct AcceptorHolder;
  std::unique_ptr<AcceptorHolder> acceptor_;
};

}  // namespace contextd::transport::internal
