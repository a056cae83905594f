// ModelGateway: contextd as the agent's model endpoint, for Anthropic (ANTHROPIC_BASE_URL) and
// OpenAI-compatible clients (OPENAI_BASE_URL). Serves, on the shared HTTP listener, the routes of
// every API row (model/model_api.h: POST /v1/messages and /v1/messages/count_tokens, Messages;
// /v1/chat/completions, Chat Completions; /v1/responses and /v1/responses/compact, Responses):
// a request of the method its API folds has F(.) applied, then goes to the API's provider (a
// Responses request naming history the provider keeps, `previous_response_id` or
// `conversation`, is forwarded as sent); other methods pass through to it. The rest of /v1/ is
// forwarded as sent to the provider its headers claim (ModelProvider::claim_headers: an
// `anthropic-version` or `x-api-key` header, as every Anthropic client sends, is Anthropic's;
// the rest OpenAI's), and HEAD / answers. Requests are forwarded over pooled HTTP(S); the answer
// (JSON or SSE) is relayed as it arrives, status, headers and body verbatim, while the provider's
// usage is read on the way and recorded. Pass-through rules: every request header but the
// hop-by-hop ones (and Host, Content-Length, Accept-Encoding) goes upstream unchanged, provider
// keys included; only `messages` (Responses: `input`) of the body is ever rewritten; nothing of a
// request body or key is logged. The gateway's own errors take the shape of the provider asked.
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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "model/context_manager.h"
#include "model/conversation_store.h"
#include "model/model_api.h"
#include "transport/http_client.h"
#include "transport/http_route.h"

namespace contextd::model {

// One provider as configured (model_gateway.providers.<name>).
struct ModelProviderOptions {
  // scheme://host[:port][/path prefix]: gets the request target, less the provider's
  // target_prefix_dropped (an OpenAI base URL as OpenAI clients take it ends where
  // "/chat/completions" goes). Empty: the provider's default_base_url.
  std::string base_url;
  // Team mode: the provider key contextd holds (model_gateway.providers.<name>.api_key_env, read
  // at start). When set, a request to that provider must carry a tenant token (tenant_tokens) as
  // x-contextd-token, x-api-key or Authorization: Bearer, else it gets the provider-shaped 401;
  // the client's key headers are removed and this key is sent instead (in the provider's
  // key_header). Empty: the client's own key passes through. Never logged.
  std::string api_key;
};

struct ModelGatewayOptions {
  // ModelProvider::name -> its options; a provider not named here takes its defaults.
  std::map<std::string, ModelProviderOptions> providers;
  size_t max_body_bytes = 32u << 20;  // larger requests get 413
  // x-contextd-token value -> tenant. Empty: every request is tenant "local".
  std::map<std::string, std::string> tenant_tokens;
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
  // `clients`: ModelProvider::name -> the client carrying that provider's calls (one client may
  // serve several), one for every provider of ModelProviders(). InvalidArgument when one is
  // missing, or when `options` names a provider that is not in the table.
  static absl::StatusOr<std::unique_ptr<ModelGateway>> Create(
      ModelGatewayOptions options, ContextManager& context, ConversationStore& store,
      const std::map<std::string, transport::HttpClient*>& clients,
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
  // A provider as this gateway forwards to it.
  struct Upstream {
    const ModelProvider* provider = nullptr;
    std::string base_url;
    std::string api_key;  // team mode's; empty: the client's key passes
    transport::HttpClient* client = nullptr;
  };
  // Who asked, as Admit found it.
  struct Caller {
    std::string tenant;
    std::string project;
    std::optional<bool> auto_fold;
    bool lessons = true;       // x-contextd-memory is not "off"
    std::string conversation;  // the client's session header ("" when absent)
  };
  struct Exchange;
  ModelGateway(ModelGatewayOptions options, ContextManager& context, ConversationStore& store,
               std::map<std::string, Upstream, std::less<>> upstreams,
               std::function<void(const ModelRequestReport&)> on_request);
  void Post(std::function<void()> task);
  void WorkerLoop();
  // `route_api`: the API row of the route taken, null for the shared /v1/ route.
  void Handle(const ModelApiRow* route_api, transport::HttpRequest request,
              std::shared_ptr<transport::HttpResponder> responder);
  // The tenant, project and auto-fold choice of `request`; nullopt after answering an error.
  std::optional<Caller> Admit(const Exchange& exchange, const transport::HttpRequest& request);
  // F(.) for a request of `api`, on a worker thread, then Forward.
  void Fold(const ModelApiRow& api, const std::shared_ptr<Exchange>& exchange,
            const Caller& caller);
  void Forward(std::shared_ptr<Exchange> exchange);

  const ModelGatewayOptions options_;
  ContextManager& context_;
  ConversationStore& store_;
  const std::map<std::string, Upstream, std::less<>> upstreams_;  // by ModelProvider::name
  const std::function<void(const ModelRequestReport&)> on_request_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace contextd::model
