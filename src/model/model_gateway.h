// ModelGateway: contextd as the agent's model endpoint, for Anthropic (ANTHROPIC_BASE_URL) and
// OpenAI-compatible clients (OPENAI_BASE_URL). Serves, on the shared HTTP listener, POST
// /v1/messages and /v1/messages/count_tokens (Messages; F(.) applied, then forwarded to the
// Anthropic upstream), POST /v1/chat/completions and POST /v1/responses (Chat Completions and
// Responses; F(.) applied, then forwarded to the OpenAI upstream; a Responses request naming
// history the provider keeps, `previous_response_id` or `conversation`, is forwarded as sent),
// the rest of /v1/ (forwarded as sent: to the Anthropic upstream when the request carries an
// `anthropic-version` or `x-api-key` header, as every Anthropic client's does, else to the OpenAI
// one) and HEAD /. Requests are forwarded over pooled HTTP(S); the answer (JSON or SSE) is relayed
// as it arrives, status, headers and body verbatim, while the provider's usage is read on the way
// and recorded. Pass-through rules: every request header but the hop-by-hop ones (and Host,
// Content-Length, Accept-Encoding) goes upstream unchanged, provider keys included; only
// `messages` (Responses: `input`) of the body is ever rewritten; nothing of a request body or key
// is logged. The gateway's own errors take the shape of the API asked.
// Thread-safety: handlers run on the listener's I/O threads and hand the work to the gateway's
// own worker threads (parsing, folding and scrubbing never block I/O); the clients' callbacks
// relay from the upstream call's thread. Shutting down: stop the HTTP server, Stop() the
// gateway, destroy the clients (ends the calls in flight), then the gateway.
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

#include "absl/status/statusor.h"
#include "model/context_manager.h"
#include "model/conversation_store.h"
#include "transport/http_client.h"
#include "transport/http_route.h"

namespace contextd::model {

struct ModelGatewayOptions {
  // scheme://host[:port][/path prefix]: gets the request target as sent (/v1/messages).
  std::string anthropic_base_url = "https://api.anthropic.com";
  // An OpenAI base URL as OpenAI clients take it (scheme://host[:port]/path, the path ending
  // where "/chat/completions" goes): gets the target without its leading "/v1".
  std::string openai_base_url = "https://api.openai.com/v1";
  size_t max_body_bytes = 32u << 20;  // larger requests get 413
  // x-contextd-token value -> tenant. Empty: every request is tenant "local".
  std::map<std::string, std::string> tenant_tokens;
  // Team mode, per provider: the provider key contextd holds (model_gateway.<provider>.api_key_env,
  // read at start). When set, a request to that provider must carry a tenant token (above) as
  // x-contextd-token, x-api-key or Authorization: Bearer, else it gets the provider-shaped 401;
  // the client's key headers are removed and this key is sent instead (Anthropic: x-api-key,
  // OpenAI: Authorization: Bearer). Empty: the client's own key passes through. Never logged.
  std::string anthropic_api_key;
  std::string openai_api_key;
  // X-Contextd-Project -> project id (tools::ProjectFromHeader); InvalidArgument -> 400. Null:
  // every request is in project "default".
  std::function<absl::StatusOr<std::string>(std::string_view)> project_of_header;
  int worker_threads = 2;
};

// What happened to one forwarded request (for metrics and `contextd status`).
struct ModelRequestReport {
  UsageRecord usage;
  AppliedRequest applied;
  std::string outcome;  // "ok", "upstream_error", "unreachable", "timeout", "cancelled", ...
  // Why F(.) was not applied to a request of a folded API (ModelRequest::unfoldable_reason):
  // "previous_response_id", "conversation"; empty when it was.
  std::string unfoldable;
};

class ModelGateway {
 public:
  // `anthropic_client` and `openai_client` (may be the same) carry the calls to each upstream.
  ModelGateway(ModelGatewayOptions options, ContextManager& context, ConversationStore& store,
               transport::HttpClient& anthropic_client, transport::HttpClient& openai_client,
               std::function<void(const ModelRequestReport&)> on_request);
  // Stop() first.
  ~ModelGateway();
  ModelGateway(const ModelGateway&) = delete;
  ModelGateway& operator=(const ModelGateway&) = delete;

  // The routes to add to the listener (HttpServerOptions::routes).
  std::vector<transport::HttpRoute> Routes();

  // Joins the worker threads (work not started is dropped: its clients get a 500). Call it
  // after the HTTP server stopped and before the clients are destroyed: a client's destruction
  // ends the calls in flight, whose last callbacks still use the gateway. Idempotent.
  void Stop();

 private:
  struct Exchange;
  void Post(std::function<void()> task);
  void WorkerLoop();
  void Handle(transport::HttpRequest request, std::shared_ptr<transport::HttpResponder> responder);
  void Forward(std::shared_ptr<Exchange> exchange);

  const ModelGatewayOptions options_;
  ContextManager& context_;
  ConversationStore& store_;
  transport::HttpClient& anthropic_client_;
  transport::HttpClient& openai_client_;
  const std::function<void(const ModelRequestReport&)> on_request_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// The Anthropic-shaped error body: {"type":"error","error":{"type":...,"message":...}}.
std::string AnthropicError(std::string_view type, std::string_view message);

// The OpenAI-shaped error body: {"error":{"message":...,"type":...,"param":null,"code":...}}
// (`code` null when empty).
std::string OpenAIError(std::string_view type, std::string_view message,
                        std::string_view code = "");

}  // namespace contextd::model
