#include "transport/internal/http_listener.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <utility>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core.hpp"
#include "transport/internal/http_connection.h"

namespace contextd::transport::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;

struct Listener::AcceptorHolder {
  explicit AcceptorHolder(net::io_context& ioc) : acceptor(net::make_strand(ioc)) {}
  tcp::acceptor acceptor;
};

// ---- Listener.

Listener::Listener(const HttpServerOptions& options, std::vector<HttpRoute> routes)
    : opts_(options), host_policy_(options.allowed_hosts, options.allowed_origins) {
  for (auto& r : routes) {
    auto entry = std::make_unique<RouteEntry>();
    if (r.name.empty()) r.name = r.path;
    entry->route = std::move(r);
    routes_.push_back(std::move(entry));
  }
  unrouted_.route.name = "none";
  max_body_limit_ = opts_.max_message_bytes;
  for (const auto& e : routes_) max_body_limit_ = std::max(max_body_limit_, BodyLimit(e.get()));
  ioc_ = std::make_unique<net::io_context>(std::max(1, opts_.io_threads));
}

Listener::~Listener() {
  StopThreads();
  Finish();
}

absl::Status Listener::Listen() {
  beast::error_code ec;
  auto address = net::ip::make_address(opts_.listen_address, ec);
  if (ec) {
    return absl::InvalidArgumentError("http: invalid listen address '" + opts_.listen_address +
                                      "': " + ec.message());
  }
  acceptor_ = std::make_unique<AcceptorHolder>(*ioc_);
  tcp::acceptor& acceptor = acceptor_->acceptor;
  tcp::endpoint endpoint(address, opts_.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError("http: cannot listen on " + opts_.listen_address + ":" +
                                  std::to_string(opts_.port) + ": " + ec.message());
  }
  port_ = acceptor.local_endpoint().port();
  host_for_url_ = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return absl::OkStatus();
}

void Listener::DoAccept() {
  Strand strand = net::make_strand(*ioc_);
  acceptor_->acceptor.async_accept(
      strand, [this, strand](beast::error_code ec, tcp::socket s) mutable {
        if (ec == net::error::operation_aborted) return;
        if (!ec) {
          if (connections_open.load(std::memory_order_relaxed) >= opts_.max_connections) {
            connections_rejected.fetch_add(1, std::memory_order_relaxed);
            beast::error_code ignored;
            s.close(ignored);
          } else {
            connections_accepted.fetch_add(1, std::memory_order_relaxed);
            StartConnection(this, std::move(s), std::move(strand));
          }
        }
        DoAccept();
      });
}

void Listener::Start() {
  DoAccept();
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
          base::ReportInternalError("http", std::string("I/O handler failed: ") + e.what());
        } catch (...) {
          base::ReportInternalError("http", "I/O handler failed: unknown exception");
        }
      }
    });
  }
}

void Listener::StopThreads() {
  if (threads_stopped_) return;
  threads_stopped_ = true;
  if (ioc_) ioc_->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Listener::Finish() {
  std::vector<std::shared_ptr<ConnLink>> links;
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    if (finished_) return;
    finished_ = true;
    for (auto& [ptr, weak] : links_) {
      if (auto l = weak.lock()) links.push_back(std::move(l));
    }
  }
  std::vector<std::shared_ptr<Connection>> conns;  // destroyed outside every lock
  for (auto& l : links) {
    std::lock_guard<std::mutex> lock(l->mu);
    conns.push_back(std::move(l->conn));
  }
  links.clear();
  conns.clear();  // outside every lock: a connection's destructor unregisters its link
  acceptor_.reset();
  ioc_.reset();  // destroys pending handlers and with them every connection
}

RouteEntry* Listener::Match(std::string_view path) {
  RouteEntry* prefix = nullptr;
  for (auto& e : routes_) {
    const HttpRoute& r = e->route;
    if (r.match == RouteMatch::kExact) {
      if (path == r.path) return e.get();
    } else if (path.substr(0, r.path.size()) == r.path &&
               (prefix == nullptr || r.path.size() > prefix->route.path.size())) {
      prefix = e.get();
    }
  }
  return prefix;
}

std::string Listener::AllowOf(const RouteEntry& entry) {
  std::string allow;
  for (const auto& m : entry.route.methods) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  return allow;
}

std::optional<std::string> Listener::Authenticate(std::string_view authorization) const {
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

void Listener::CountResponse(RouteEntry* entry, int status) {
  const int cls = std::clamp(status / 100, 1, kStatusClasses) - 1;
  (entry != nullptr ? entry : &unrouted_)->responses[cls].fetch_add(1, std::memory_order_relaxed);
}

void Listener::Register(const std::shared_ptr<ConnLink>& link) {
  std::lock_guard<std::mutex> lock(links_mu_);
  links_.emplace(link.get(), link);
}

void Listener::Unregister(const ConnLink* link) {
  std::lock_guard<std::mutex> lock(links_mu_);
  links_.erase(link);
}

void Listener::FillStats(HttpServerStats* s) const {
  s->connections_open = connections_open.load();
  s->connections_accepted = connections_accepted.load();
  s->connections_rejected = connections_rejected.load();
  s->requests_total = requests_total.load();
  s->payload_too_large = payload_too_large.load();
  s->auth_failures = auth_failures.load();
  s->forbidden = forbidden.load();
  s->bytes_received = bytes_received.load();
  s->bytes_sent = bytes_sent.load();
  s->slow_clients_closed = slow_clients_closed.load();
}

void Listener::RenderMetrics(std::string* out) const {
  auto metric = [out](const char* name, const char* type, const char* help, uint64_t v) {
    out->append("# HELP contextd_http_").append(name).append(" ").append(help).append("\n");
    out->append("# TYPE contextd_http_").append(name).append(" ").append(type).append("\n");
    out->append("contextd_http_").append(name).append(" ").append(std::to_string(v));
    out->append("\n");
  };
  metric("connections_open", "gauge", "Open HTTP connections.", connections_open.load());
  metric("connections_accepted_total", "counter", "HTTP connections accepted.",
         connections_accepted.load());
  metric("connections_rejected_total", "counter",
         "HTTP connections closed at accept (max_connections reached).",
         connections_rejected.load());
  metric("slow_clients_closed_total", "counter",
         "HTTP connections closed because the client did not read (write timeout, 8 MiB behind).",
         slow_clients_closed.load());
  metric("received_bytes_total", "counter", "Bytes read from HTTP clients.", bytes_received.load());
  metric("sent_bytes_total", "counter", "Bytes written to HTTP clients.", bytes_sent.load());
  metric("payload_too_large_total", "counter", "Requests refused with 413 (body too large).",
         payload_too_large.load());
  metric("auth_failures_total", "counter", "Requests refused with 401 (bearer token).",
         auth_failures.load());
  metric("forbidden_total", "counter", "Requests refused with 403 (Host or Origin not allowed).",
         forbidden.load());
  out->append(
      "# HELP contextd_http_responses_total HTTP responses by route and status class.\n"
      "# TYPE contextd_http_responses_total counter\n");
  auto rows = [out](const RouteEntry& e) {
    for (int c = 0; c < kStatusClasses; ++c) {
      const uint64_t v = e.responses[c].load(std::memory_order_relaxed);
      if (v == 0) continue;
      out->append("contextd_http_responses_total{route=\"").append(e.route.name);
      out->append("\",code=\"").append(std::to_string(c + 1)).append("xx\"} ");
      out->append(std::to_string(v)).append("\n");
    }
  };
  for (const auto& e : routes_) rows(*e);
  rows(unrouted_);
}

}  // namespace contextd::transport::internal
