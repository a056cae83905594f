// AnthropicGateway: contextd as the agent's Anthropic endpoint (ANTHROPIC_BASE_URL). Serves, on
// the shared HTTP listener, POST /v1/messages and /v1/messages/count_tokens (F(.) applied, then
// forwarded), the rest of /v1/ (forwarded as sent) and HEAD /. Requests are forwarded to the
// configured upstream over pooled HTTP(S); the answer (JSON or SSE) is relayed as it arrives,
// status, headers and body verbatim, while the provider's usage is read on the way and recorded.
// Pass-through rules: every request header but the hop-by-hop ones (and Host, Content-Length,
// Accept-Encoding) goes upstream unchanged, provider keys included; only `messages` content of
// the body is ever rewritten; nothing of a request body or key is logged.
// Thread-safety: handlers run on the listener's I/O threads and hand the work to the gateway's
// own worker threads (parsing, folding and scrubbing never block I/O); the client's callbacks
// relay from the upstream call's thread. Shutting down: stop the HTTP server, Stop() the
// gateway, destroy the client (ends the calls in flight), then the gateway.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/context_manager.h"
#include "model/conversation_store.h"
#include "transport/http_client.h"
#include "transport/http_route.h"

namespace contextd::model {

struct AnthropicGatewayOptions {
  std::string base_url = "https://api.anthropic.com";  // scheme://host[:port][/path prefix]
  size_t max_body_bytes = 32u << 20;                   // larger requests get 413
  // x-contextd-token value -> tenant. Empty: every request is tenant "local".
  std::map<std::string, std::string> tenant_tokens;
  int worker_threads = 2;
};

// What happened to one forwarded request (for metrics and `contextd status`).
struct ModelRequestReport {
  UsageRecord usage;
  AppliedRequest applied;
  std::string outcome;  // "ok", "upstream_error", "unreachable", "timeout", "cancelled", ...
};

class AnthropicGateway {
 public:
  AnthropicGateway(AnthropicGatewayOptions options, ContextManager& context,
                   ConversationStore& store, transport::HttpClient& client,
                   std::function<void(const ModelRequestReport&)> on_request);
  // Stop() first.
  ~AnthropicGateway();
  AnthropicGateway(const AnthropicGateway&) = delete;
  AnthropicGateway& operator=(const AnthropicGateway&) = delete;

  // The routes to add to the listener (HttpServerOptions::routes).
  std::vector<transport::HttpRoute> Routes();

  // Joins the worker threads (work not started is dropped: its clients get a 500). Call it
  // after the HTTP server stopped and before the client is destroyed: the client's destruction
  // ends the calls in flight, whose last callbacks still use the gateway. Idempotent.
  void Stop();

 private:
  struct Exchange;
  void Post(std::function<void()> task);
  void WorkerLoop();
  void HandleMessages(transport::HttpRequest request,
                      std::shared_ptr<transport::HttpResponder> responder);
  void Forward(std::shared_ptr<Exchange> exchange);

  const AnthropicGatewayOptions options_;
  ContextManager& context_;
  ConversationStore& store_;
  transport::HttpClient& client_;
  const std::function<void(const ModelRequestReport&)> on_request_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The Anthropic-shaped error body: {"type":"error","error":{"type":...,"message":...}}.
std::string AnthropicError(std::string_view type, std::string_view message);

}  // namespace contextd::model
