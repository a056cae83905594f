#include "model/model_api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "model/anthropic_request.h"
#include "model/openai_chat_request.h"
#include "model/openai_responses_request.h"
#include "model/raw_json.h"

namespace contextd::model {
namespace {

// The gateway's own error `status` the Anthropic way (its error type per status).
std::string AnthropicErrorBody(int status, std::string_view message) {
  std::string_view type = status == 401   ? "authentication_error"
                          : status == 403 ? "permission_error"
                          : status == 404 ? "not_found_error"
                          : status == 413 ? "request_too_large"
                          : status == 504 ? "timeout_error"
                          : status >= 500 ? "api_error"
                                          : "invalid_request_error";
  return AnthropicError(type, message);
}

// The gateway's own error `status` the OpenAI way (its type, and a code where one fits).
std::string OpenAIErrorBody(int status, std::string_view message) {
  std::string_view type = status >= 500 ? "server_error" : "invalid_request_error";
  std::string_view code = status == 401   ? "invalid_api_key"
                          : status == 403 ? "forbidden"
                          : status == 408 ? "request_timeout"
                          : status == 413 ? "request_too_large"
                          : status == 431 ? "request_header_fields_too_large"
                          : status == 502 ? "upstream_unreachable"
                          : status == 504 ? "upstream_timeout"
                                          : "";
  return OpenAIError(type, message, code);
}

// An adapter's Parse as a ModelRequestParser.
template <typename Request>
absl::StatusOr<std::unique_ptr<ModelRequest>> ParseAs(std::string body, ModelRequest*) {
  auto parsed = Request::Parse(std::move(body));
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<ModelRequest>(*std::move(parsed));
}

// Messages takes the conversation's previous request over (of the same API: see takes_over).
absl::StatusOr<std::unique_ptr<ModelRequest>> ParseMessages(std::string body,
                                                            ModelRequest* previous) {
  auto parsed = AnthropicRequest::Parse(std::move(body), static_cast<AnthropicRequest*>(previous));
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<ModelRequest>(*std::move(parsed));
}

constexpr UsageFields kMessagesUsage{"message", "input_tokens", "output_tokens", ""};
constexpr UsageFields kChatUsage{"", "prompt_tokens", "completion_tokens", "prompt_tokens_details"};
constexpr UsageFields kResponsesUsage{"response", "input_tokens", "output_tokens",
                                      "input_tokens_details"};

std::vector<ModelProvider> BuildProviders() {
  std::vector<ModelProvider> providers;
  // Every Anthropic client sends `anthropic-version` (Claude Code under OAuth too, beside an
  // `authorization: Bearer`) or an Anthropic key header; OpenAI clients send neither.
  providers.push_back({.name = "anthropic",
                       .default_base_url = "https://api.anthropic.com",
                       .target_prefix_dropped = "",
                       .key_header = "x-api-key",
                       .key_prefix = "",
                       .claim_headers = {"anthropic-version", "x-api-key"},
                       .error_body = &AnthropicErrorBody,
                       .passthrough_usage = kMessagesUsage});
  // Any OpenAI-compatible server, its base URL as OpenAI clients take it (ending where
  // "/chat/completions" goes).
  providers.push_back({.name = "openai",
                       .default_base_url = "https://api.openai.com/v1",
                       .target_prefix_dropped = "/v1",
                       .key_header = "Authorization",
                       .key_prefix = "Bearer ",
                       .claim_headers = {},
                       .error_body = &OpenAIErrorBody,
                       .passthrough_usage = kChatUsage});
  return providers;
}

// In the order of ModelApi.
std::vector<ModelApiRow> BuildApis() {
  std::vector<ModelApiRow> apis;
  apis.push_back({.api = ModelApi::kAnthropicMessages,
                  .name = "anthropic",
                  .title = "Messages",
                  .provider = "anthropic",
                  .routes = {{"/v1/messages", {"POST"}}, {"/v1/messages/count_tokens", {"POST"}}},
                  .folded_method = "POST",
                  .parse = &ParseMessages,
                  .takes_over = true,
                  .reasoning_binding_configured = false,
                  .usage = kMessagesUsage});
  // Every method: POST is folded, the others (stored completions) pass through.
  apis.push_back({.api = ModelApi::kOpenAIChat,
                  .name = "openai_chat",
                  .title = "Chat Completions",
                  .provider = "openai",
                  .routes = {{"/v1/chat/completions", {}}},
                  .folded_method = "POST",
                  .parse = &ParseAs<OpenAIChatRequest>,
                  .takes_over = false,
                  .reasoning_binding_configured = false,
                  .usage = kChatUsage});
  // POST /v1/responses is folded (/v1/responses/<id> and the like take the /v1/ route); the
  // standalone compaction takes the conversation's input as /v1/responses does and is folded the
  // same way, so that the summary is written from what the model has been sent.
  apis.push_back({.api = ModelApi::kOpenAIResponses,
                  .name = "openai_responses",
                  .title = "Responses",
                  .provider = "openai",
                  .routes = {{"/v1/responses", {}}, {"/v1/responses/compact", {"POST"}}},
                  .folded_method = "POST",
                  .parse = &ParseAs<OpenAIResponsesRequest>,
                  .takes_over = false,
                  .reasoning_binding_configured = true,
                  .usage = kResponsesUsage});
  return apis;
}

}  // namespace

const std::vector<ModelApiRow>& ModelApis() {
  static const auto* apis = new std::vector<ModelApiRow>(BuildApis());
  return *apis;
}

const ModelApiRow& ApiRow(ModelApi api) {
  // The rows are in the order of the enum (model_api_test checks it).
  return ModelApis().at(static_cast<size_t>(api));
}

const char* ModelApiName(ModelApi api) { return ApiRow(api).name; }

const std::vector<ModelProvider>& ModelProviders() {
  static const auto* providers = new std::vector<ModelProvider>(BuildProviders());
  return *providers;
}

const ModelProvider* FindProvider(std::string_view name) {
  for (const ModelProvider& provider : ModelProviders()) {
    if (provider.name == name) return &provider;
  }
  return nullptr;
}

std::string AnthropicError(std::string_view type, std::string_view message) {
  return absl::StrCat("{\"type\":\"error\",\"error\":{\"type\":", QuoteJsonString(type),
                      ",\"message\":", QuoteJsonString(message), "}}");
}

std::string OpenAIError(std::string_view type, std::string_view message, std::string_view code) {
  return absl::StrCat("{\"error\":{\"message\":", QuoteJsonString(message),
                      ",\"type\":", QuoteJsonString(type), ",\"param\":null,\"code\":",
                      code.empty() ? std::string("null") : QuoteJsonString(code), "}}");
}

}  // namespace contextd::model
