#include "transport/http_server.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <utility>

#include "transport/internal/http_listener.h"
#include "transport/internal/mcp_endpoint.h"

namespace contextd::transport {

// The listener with its route table, and the MCP endpoint that is one of its routes. Stop order:
// no new sessions, I/O threads joined, sessions detached and closed, then the listener cuts the
// responders from their connections and destroys the io_context.
class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, std::shared_ptr<protocol::SessionFactory> factory)
      : opts_(std::move(options)), mcp_(opts_, std::move(factory)) {}

  absl::Status Start() {
    if (opts_.path.empty() || opts_.path.front() != '/') {
      return absl::InvalidArgumentError("http: path must start with '/'");
    }
    for (const auto& r : opts_.routes) {
      if (!r.handler)
        return absl::InvalidArgumentError("http: route " + r.path + " has no handler");
      if (r.path.empty() || r.path.front() != '/') {
        return absl::InvalidArgumentError("http: route path must start with '/': " + r.path);
      }
    }
    std::vector<HttpRoute> routes;
    routes.push_back(mcp_.Route());
    routes.push_back(HealthzRoute());
    if (opts_.metrics) routes.push_back(MetricsRoute());
    for (auto& r : opts_.routes) routes.push_back(std::move(r));
    opts_.routes.clear();
    listener_ = std::make_unique<internal::Listener>(opts_, std::move(routes));
    absl::Status st = listener_->Listen();
    if (!st.ok()) return st;
    mcp_.StartSweep(listener_->ioc());
    listener_->Start();
    return absl::OkStatus();
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_ || !listener_) return;
    stopped_ = true;
    mcp_.BeginStop();
    listener_->StopThreads();
    mcp_.AfterThreadsStopped();
    listener_->Finish();
  }

  HttpServerStats stats() {
    HttpServerStats s;
    if (listener_) listener_->FillStats(&s);
    s.sessions_open = mcp_.sessions_open();
    return s;
  }

  std::string RenderMetrics() {
    std::string out;
    if (listener_) listener_->RenderMetrics(&out);
    out +=
        "# HELP contextd_http_sessions_open Open MCP sessions of the HTTP transport.\n"
        "# TYPE contextd_http_sessions_open gauge\n"
        "contextd_http_sessions_open " +
        std::to_string(mcp_.sessions_open()) + "\n";
    return out;
  }

  const HttpServerOptions& opts() const { return opts_; }
  internal::Listener& listener() { return *listener_; }

 private:
  // GET/HEAD /healthz: no Host check and no token, for load balancers and probes.
  HttpRoute HealthzRoute() {
    HttpRoute r;
    r.name = "healthz";
    r.path = "/healthz";
    r.auth = RouteAuth::kNone;
    r.check_host_and_origin = false;
    r.handler = [health = opts_.health](HttpRequest req, std::shared_ptr<HttpResponder> responder) {
      if (req.method() != "GET" && req.method() != "HEAD") {
        return responder->Respond({405, "text/plain", {{"Allow", "GET"}}, "method not allowed\n"});
      }
      if (health) {
        HealthAnswer answer = health();
        return responder->Respond({answer.ready ? 200 : 503,
                                   "application/json",
                                   {{"Cache-Control", "no-store"}},
                                   answer.json + "\n"});
      }
      responder->Respond({200, "text/plain", {}, "ok\n"});
    };
    return r;
  }

  // GET /metrics: the server's metrics followed by the listener's.
  HttpRoute MetricsRoute() {
    HttpRoute r;
    r.name = "metrics";
    r.path = "/metrics";
    r.methods = {"GET"};
    r.handler = [this](HttpRequest, std::shared_ptr<HttpResponder> responder) {
      std::string body = opts_.metrics();
      if (!body.empty() && body.back() != '\n') body.push_back('\n');
      body += RenderMetrics();
      responder->Respond({200, "text/plain; version=0.0.4", {}, std::move(body)});
    };
    return r;
  }

  HttpServerOptions opts_;
  internal::McpEndpoint mcp_;
  std::unique_ptr<internal::Listener> listener_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options, std::shared_ptr<protocol::SessionFactory> factory) {
  if (!factory) return absl::InvalidArgumentError("http: a session factory is required");
  if (options.io_threads < 1) return absl::InvalidArgumentError("http: io_threads must be >= 1");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(factory));
  try {
    absl::Status st = impl->Start();
    if (!st.ok()) return st;
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("http: cannot start: ") + e.what());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::string HttpServer::listen_url() const {
  return "http://" + impl_->listener().host_for_url() + ":" +
         std::to_string(impl_->listener().port()) + impl_->opts().path;
}

uint16_t HttpServer::port() const { return impl_->listener().port(); }

HttpServerStats HttpServer::stats() const { return impl_->stats(); }

std::string HttpServer::RenderMetrics() const { return impl_->RenderMetrics(); }

void HttpServer::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace contextd::transport
