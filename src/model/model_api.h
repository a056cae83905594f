// The model gateway's two tables: one row per wire API it folds (ModelApiRow: its name, routes,
// adapter, usage reader, the provider it forwards to) and one per provider (ModelProvider: its
// default base URL, how a request target joins it, how team mode's key is sent, the shape of the
// gateway's own errors). Whatever the gateway and the context manager do per API or provider is
// read from these rows; adding an API is an adapter (a ModelRequest) and a row (src/model/README).
// Thread-safety: immutable tables, built once on first use; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/usage_parser.h"

namespace contextd::model {

class ModelRequest;

// The wire APIs the gateway folds: the key of their rows.
enum class ModelApi { kAnthropicMessages, kOpenAIChat, kOpenAIResponses };

// A model provider: where the APIs that name it are forwarded (model_gateway.providers.<name>).
struct ModelProvider {
  // The config key and the clients' key; also the usage label of a request passed through
  // unfolded (another method, another /v1/ path).
  std::string_view name;
  std::string_view default_base_url;
  // Dropped from the front of a request target before it is joined to the base URL: "/v1" for a
  // base URL that already ends in its version, as OpenAI clients take it.
  std::string_view target_prefix_dropped;
  // Team mode: the header carrying the key contextd holds, and what precedes the key in it.
  std::string_view key_header;
  std::string_view key_prefix;
  // On the shared /v1/ route, a request carrying any of these headers is this provider's; the
  // provider with none takes the rest.
  std::vector<std::string_view> claim_headers;
  // The body of the gateway's own error `status` in this provider's shape.
  std::string (*error_body)(int status, std::string_view message);
  // How the usage of an answer to a request passed through unfolded is read.
  UsageFields passthrough_usage;
};

// A path an API serves; `methods` empty: every method (only ModelApiRow::folded_method folds).
struct ModelApiRoute {
  std::string_view path;
  std::vector<std::string> methods;
};

// Parses a request body of one API. `previous`: the conversation's last request of the same API
// when the API takes one over (ModelApiRow::takes_over), else null; spent by the call.
// InvalidArgument naming the problem when the body is not a request of the API.
using ModelRequestParser =
    absl::StatusOr<std::unique_ptr<ModelRequest>> (*)(std::string body, ModelRequest* previous);

struct ModelApiRow {
  ModelApi api;
  const char* name;        // metrics and usage label: "anthropic", "openai_chat", ...
  std::string_view title;  // in the gateway's errors: "the request body is not a <title> request"
  std::string_view provider;  // ModelProvider::name
  std::vector<ModelApiRoute> routes;
  std::string_view folded_method;  // "POST": other methods pass through unfolded
  ModelRequestParser parse;        // the adapter
  // A conversation's next request takes over the unchanged messages of its last one (needs a
  // conversation id: only Messages clients send one that the body is bound to).
  bool takes_over;
  // Whether the API's reasoning items bind to their prefix is model_gateway.auto_fold.
  // reasoning_items_bound's call (Responses); else thinking always binds.
  bool reasoning_binding_configured;
  UsageFields usage;  // the usage reader of a folded request's answer
};

// Every API row, in the order of ModelApi (their routes are added in this order).
const std::vector<ModelApiRow>& ModelApis();
// The row of `api`.
const ModelApiRow& ApiRow(ModelApi api);
// The API's label in metrics and usage records (ModelApiRow::name).
const char* ModelApiName(ModelApi api);

// Every provider row; the first one shapes the errors of the shared /v1/ route's refusals.
const std::vector<ModelProvider>& ModelProviders();
// The provider named `name`, or null.
const ModelProvider* FindProvider(std::string_view name);
// The provider of a request on the shared /v1/ route, by its headers (ModelProvider::
// claim_headers); `has_header` says whether the request carries one.
template <typename HasHeader>
const ModelProvider& ClaimingProvider(const HasHeader& has_header) {
  const ModelProvider* fallback = &ModelProviders().front();
  for (const ModelProvider& provider : ModelProviders()) {
    if (provider.claim_headers.empty()) fallback = &provider;
    for (std::string_view header : provider.claim_headers) {
      if (has_header(header)) return provider;
    }
  }
  return *fallback;
}

// The Anthropic-shaped error body: {"type":"error","error":{"type":...,"message":...}}.
std::string AnthropicError(std::string_view type, std::string_view message);
// The OpenAI-shaped error body: {"error":{"message":...,"type":...,"param":null,"code":...}}
// (`code` null when empty).
std::string OpenAIError(std::string_view type, std::string_view message,
                        std::string_view code = "");

}  // namespace contextd::model
