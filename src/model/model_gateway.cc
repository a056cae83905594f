#include "model/model_gateway.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "base/ids.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "model/usage_parser.h"

namespace contextd::model {
namespace {

using transport::HttpHeaders;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Request headers never forwarded: hop-by-hop ones, those the client recomputes, and contextd's.
bool DropRequestHeader(std::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  return n == "host" || n == "content-length" || n == "transfer-encoding" || n == "connection" ||
         n == "keep-alive" || n == "upgrade" || n == "te" || n == "trailer" ||
         n.starts_with("proxy-") || n == "accept-encoding" || n.starts_with("x-contextd-");
}

// The x-contextd-auto-fold header: "on"/"true"/"1" or "off"/"false"/"0" (any case); nullopt
// when absent (the configured default applies). InvalidArgument for another value.
absl::StatusOr<std::optional<bool>> AutoFoldHeader(std::string_view value) {
  if (value.empty()) return std::optional<bool>();
  std::string v = absl::AsciiStrToLower(std::string(value));
  if (v == "on" || v == "true" || v == "1") return std::optional<bool>(true);
  if (v == "off" || v == "false" || v == "0") return std::optional<bool>(false);
  return absl::InvalidArgumentError("contextd: x-contextd-auto-fold must be on or off");
}

bool DropResponseHeader(std::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  return n == "content-length" || n == "transfer-encoding" || n == "connection" ||
         n == "keep-alive" || n == "content-type";
}

// ASCII case-insensitive equality (header names; absl's takes its own string_view here).
bool SameIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The tenant of a model request, or nullopt when it must get a 401. Without tokens every request
// is tenant "local" (no team mode then: the server refuses api_key_env without a token file).
// With tokens, x-contextd-token names it; in team mode the client's key header (x-api-key, or
// Authorization: Bearer) may carry the token instead, since contextd replaces it anyway.
std::optional<std::string> TenantOf(const transport::HttpRequest& request,
                                    const std::map<std::string, std::string>& tokens,
                                    bool team_mode) {
  if (tokens.empty()) return team_mode ? std::nullopt : std::optional<std::string>("local");
  auto known = [&](std::string_view token) -> std::optional<std::string> {
    if (token.empty()) return std::nullopt;
    auto it = tokens.find(std::string(token));
    if (it == tokens.end()) return std::nullopt;
    return it->second;
  };
  if (request.HasHeader("x-contextd-token")) return known(request.Header("x-contextd-token"));
  if (!team_mode) return std::nullopt;
  if (auto t = known(request.Header("x-api-key"))) return t;
  std::string_view auth = request.Header("authorization");
  constexpr std::string_view kBearer = "bearer ";
  if (auth.size() > kBearer.size() && SameIgnoringCase(auth.substr(0, kBearer.size()), kBearer)) {
    std::string_view token = auth.substr(kBearer.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    return known(token);
  }
  return std::nullopt;
}

std::string JoinUrl(std::string_view base, std::string_view target) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  return absl::StrCat(std::string(base), std::string(target));
}

// The two upstreams: where a request goes and the shape of the gateway's own errors for it.
enum class Provider { kAnthropic, kOpenAI };

// A request on the shared /v1/ routes is an Anthropic one when it carries the header every
// Anthropic client sends (`anthropic-version`; Claude Code under OAuth sends it beside an
// `authorization: Bearer`) or an Anthropic key header; OpenAI clients send neither.
// The conversation a request belongs to, as its client names it: Claude Code's session header,
// OpenCode's `x-session-id`, Codex's `session_id`; "" when it names none (its threads are then
// told apart by their first message alone).
std::string ConversationHeader(const transport::HttpRequest& request) {
  for (std::string_view name :
       {"x-claude-code-session-id", "x-session-id", "session_id", "session-id"}) {
    std::string_view value = request.Header(name);
    if (!value.empty()) return std::string(value);
  }
  return "";
}

Provider ProviderOf(const transport::HttpRequest& request) {
  return request.HasHeader("anthropic-version") || request.HasHeader("x-api-key")
             ? Provider::kAnthropic
             : Provider::kOpenAI;
}

// The gateway's own error for `status`, in `provider`'s shape (its error type, and OpenAI's code).
transport::HttpResponse ErrorResponse(Provider provider, int status, std::string_view message) {
  // The message may echo what a client sent (a header, a path): the body stays valid UTF-8.
  const std::string clean = base::ToValidUtf8(message);
  message = clean;
  transport::HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  if (provider == Provider::kAnthropic) {
    std::string_view type = status == 401   ? "authentication_error"
                            : status == 403 ? "permission_error"
                            : status == 404 ? "not_found_error"
                            : status == 413 ? "request_too_large"
                            : status == 504 ? "timeout_error"
                            : status >= 500 ? "api_error"
                                            : "invalid_request_error";
    response.body = AnthropicError(type, message);
  } else {
    std::string_view type = status >= 500 ? "server_error" : "invalid_request_error";
    std::string_view code = status == 401   ? "invalid_api_key"
                            : status == 403 ? "forbidden"
                            : status == 408 ? "request_timeout"
                            : status == 413 ? "request_too_large"
                            : status == 431 ? "request_header_fields_too_large"
                            : status == 502 ? "upstream_unreachable"
                            : status == 504 ? "upstream_timeout"
                                            : "";
    response.body = OpenAIError(type, message, code);
  }
  return response;
}

}  // namespace

std::string AnthropicError(std::string_view type, std::string_view message) {
  return absl::StrCat("{\"type\":\"error\",\"error\":{\"type\":", QuoteJsonString(type),
                      ",\"message\":", QuoteJsonString(message), "}}");
}

std::string OpenAIError(std::string_view type, std::string_view message, std::string_view code) {
  return absl::StrCat("{\"error\":{\"message\":", QuoteJsonString(message),
                      ",\"type\":", QuoteJsonString(type), ",\"param\":null,\"code\":",
                      code.empty() ? std::string("null") : QuoteJsonString(code), "}}");
}

struct ModelGateway::Exchange {
  std::shared_ptr<transport::HttpResponder> responder;
  Provider provider = Provider::kAnthropic;
  std::string base_url;  // of the provider (named in errors)
  std::string method;
  std::string target;
  std::string url;
  HttpHeaders headers;
  std::string body;
  std::chrono::steady_clock::time_point start;
  ModelRequestReport report;
  UsageFormat usage_format = UsageFormat::kAnthropic;
  std::unique_ptr<UsageParser> usage;
  std::mutex mu;  // guards the fields below
  bool gone = false;
  bool done = false;
  bool headers_sent = false;
  std::shared_ptr<transport::ClientCall> call;
};

ModelGateway::ModelGateway(ModelGatewayOptions options, ContextManager& context,
                           ConversationStore& store, transport::HttpClient& anthropic_client,
                           transport::HttpClient& openai_client,
                           std::function<void(const ModelRequestReport&)> on_request)
    : options_(std::move(options)),
      context_(context),
      store_(store),
      anthropic_client_(anthropic_client),
      openai_client_(openai_client),
      on_request_(std::move(on_request)) {
  for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ModelGateway::~ModelGateway() { Stop(); }

void ModelGateway::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void ModelGateway::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ModelGateway::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    // A request whose work throws is reported; destroying the task releases its responder,
    // which answers 500 in the route's (the provider's) shape. The worker goes on.
    base::RunCatching("model_worker", task);
  }
}

std::vector<transport::HttpRoute> ModelGateway::Routes() {
  std::vector<transport::HttpRoute> routes;
  // The listener's own refusals (400, 403, 405, 408, 413, 431, 500) before or instead of the
  // handler: in the shape of the route's API (the shared /v1/ route cannot tell, and answers the
  // Anthropic way).
  auto error_response = [](Provider provider) {
    return [provider](int status, std::string_view message) {
      return ErrorResponse(provider, status, absl::StrCat("contextd: ", std::string(message)));
    };
  };
  auto handler = [this](transport::HttpRequest request,
                        std::shared_ptr<transport::HttpResponder> responder) {
    Handle(std::move(request), std::move(responder));
  };
  auto add = [&](const char* path, std::vector<std::string> methods, transport::RouteMatch match,
                 Provider provider) {
    transport::HttpRoute route;
    route.name = path;
    route.methods = std::move(methods);
    route.path = path;
    route.match = match;
    route.auth = transport::RouteAuth::kNone;
    route.max_body_bytes = options_.max_body_bytes;
    route.error_response = error_response(provider);
    route.handler = handler;
    routes.push_back(std::move(route));
  };
  add("/v1/messages", {"POST"}, transport::RouteMatch::kExact, Provider::kAnthropic);
  add("/v1/messages/count_tokens", {"POST"}, transport::RouteMatch::kExact, Provider::kAnthropic);
  // Every method: POST is folded, the others (stored completions) pass through.
  add("/v1/chat/completions", {}, transport::RouteMatch::kExact, Provider::kOpenAI);
  // POST is folded; /v1/responses/<id> and the like take the /v1/ route.
  add("/v1/responses", {}, transport::RouteMatch::kExact, Provider::kOpenAI);
  // The standalone compaction takes the conversation's input as /v1/responses does: it is folded
  // the same way, so that the summary is written from what the model has been sent.
  add("/v1/responses/compact", {"POST"}, transport::RouteMatch::kExact, Provider::kOpenAI);
  add("/v1/", {}, transport::RouteMatch::kPrefix, Provider::kAnthropic);
  transport::HttpRoute root;
  root.name = "/";
  root.methods = {"HEAD", "GET"};
  root.path = "/";
  root.auth = transport::RouteAuth::kNone;
  root.handler = [](transport::HttpRequest, std::shared_ptr<transport::HttpResponder> responder) {
    transport::HttpResponse response;
    response.content_type = "text/plain";
    response.body = "contextd\n";
    responder->Respond(std::move(response));
  };
  routes.push_back(std::move(root));
  return routes;
}

void ModelGateway::Handle(transport::HttpRequest request,
                          std::shared_ptr<transport::HttpResponder> responder) {
  auto exchange = std::make_shared<Exchange>();
  exchange->start = std::chrono::steady_clock::now();
  exchange->responder = responder;
  exchange->method = std::string(request.method());
  exchange->target = std::string(request.target());
  // Which API the body speaks, when F(.) applies to it; the upstream it goes to.
  std::optional<ModelApi> api;
  const bool post = request.method() == "POST";
  if (post && (request.path() == "/v1/messages" || request.path() == "/v1/messages/count_tokens")) {
    api = ModelApi::kAnthropicMessages;
    exchange->provider = Provider::kAnthropic;
  } else if (request.path() == "/v1/chat/completions") {
    if (post) api = ModelApi::kOpenAIChat;
    exchange->provider = Provider::kOpenAI;
  } else if (request.path() == "/v1/responses" || request.path() == "/v1/responses/compact") {
    if (post) api = ModelApi::kOpenAIResponses;
    exchange->provider = Provider::kOpenAI;
  } else {
    exchange->provider = ProviderOf(request);
  }
  exchange->usage_format = api == ModelApi::kOpenAIResponses ? UsageFormat::kOpenAIResponses
                           : exchange->provider == Provider::kAnthropic ? UsageFormat::kAnthropic
                                                                        : UsageFormat::kOpenAIChat;
  if (exchange->provider == Provider::kAnthropic) {
    exchange->base_url = options_.anthropic_base_url;
    exchange->url = JoinUrl(options_.anthropic_base_url, exchange->target);
  } else {
    // An OpenAI base URL already ends in its version ("/v1", or a provider's own path).
    exchange->base_url = options_.openai_base_url;
    exchange->url =
        JoinUrl(options_.openai_base_url,
                std::string_view(exchange->target).substr(std::string_view("/v1").size()));
  }
  const std::string& provider_key = exchange->provider == Provider::kAnthropic
                                        ? options_.anthropic_api_key
                                        : options_.openai_api_key;
  const bool team_mode = !provider_key.empty();
  auto tenant = TenantOf(request, options_.tenant_tokens, team_mode);
  if (!tenant) {
    responder->Respond(ErrorResponse(
        exchange->provider, 401,
        team_mode ? "contextd: this gateway holds the provider key: authenticate with your "
                    "contextd token as x-api-key or Authorization: Bearer"
                  : "contextd: this gateway needs an x-contextd-token header with a known "
                    "token"));
    return;
  }
  std::string project = "default";
  if (std::string_view named = request.Header("x-contextd-project");
      !named.empty() && options_.project_of_header) {
    auto id = options_.project_of_header(named);
    if (!id.ok()) {
      responder->Respond(ErrorResponse(exchange->provider, 400,
                                       absl::StrCat("contextd: ", id.status().message())));
      return;
    }
    project = *std::move(id);
  }
  auto auto_fold = AutoFoldHeader(request.Header("x-contextd-auto-fold"));
  if (!auto_fold.ok()) {
    responder->Respond(ErrorResponse(exchange->provider, 400,
                                     std::string(auto_fold.status().message())));
    return;
  }
  for (const auto& [name, value] : request.Headers()) {
    if (DropRequestHeader(name)) continue;
    // Team mode: the client's credentials (its contextd token) never reach the provider.
    if (team_mode &&
        (SameIgnoringCase(name, "x-api-key") || SameIgnoringCase(name, "authorization"))) {
      continue;
    }
    exchange->headers.emplace_back(name, value);
  }
  if (team_mode) {
    if (exchange->provider == Provider::kAnthropic) {
      exchange->headers.emplace_back("x-api-key", provider_key);
    } else {
      exchange->headers.emplace_back("Authorization", absl::StrCat("Bearer ", provider_key));
    }
  }
  std::string session(ConversationHeader(request));
  exchange->body = request.TakeBody();
  exchange->report.usage.key.tenant = *tenant;
  exchange->report.usage.project = project;
  if (api) {
    exchange->report.usage.api = ModelApiName(*api);
  } else {
    exchange->report.usage.api =
        exchange->provider == Provider::kAnthropic ? "anthropic" : "openai";
  }
  exchange->report.usage.request_id = base::RandomId("mreq_", 8);
  exchange->report.usage.at_ms = WallMs();
  std::weak_ptr<Exchange> weak = exchange;
  responder->OnClientGone([weak] {
    auto gone = weak.lock();
    if (!gone) return;
    std::shared_ptr<transport::ClientCall> call;
    {
      std::lock_guard<std::mutex> lock(gone->mu);
      gone->gone = true;
      call = gone->call;
    }
    if (call) call->Cancel();
  });
  if (!api) {
    Forward(std::move(exchange));
    return;
  }
  Post([this, exchange, tenant = *tenant, session, api = *api, auto_fold = *auto_fold, project] {
    auto parsed = context_.Parse(api, tenant, session, std::move(exchange->body));
    if (!parsed.ok()) {
      const char* name = api == ModelApi::kAnthropicMessages ? "Messages"
                         : api == ModelApi::kOpenAIChat      ? "Chat Completions"
                                                             : "Responses";
      exchange->responder->Respond(ErrorResponse(
          exchange->provider, 400,
          absl::StrCat("contextd: the request body is not a ", name,
                       " request: ", parsed.status().message())));
      return;
    }
    std::shared_ptr<ModelRequest> messages = *std::move(parsed);
    exchange->report.usage.model = messages->model();
    if (std::string_view reason = messages->unfoldable_reason(); !reason.empty()) {
      // History the provider keeps (previous_response_id, conversation): this body is not the
      // conversation, so nothing of it is rewritten, charged or scrubbed; it goes as sent.
      exchange->report.unfoldable = std::string(reason);
      exchange->body = messages->body();
      messages.reset();
      Forward(exchange);
      return;
    }
    auto applied = context_.Apply(tenant, session, messages, WallMs(), auto_fold, project);
    messages.reset();  // the context manager keeps it for the conversation's next request
    if (!applied.ok()) {
      base::LogError(
          absl::StrCat("model gateway: conversation state: ", applied.status().ToString()));
      exchange->responder->Respond(ErrorResponse(
          exchange->provider, 500,
          "contextd: could not keep this conversation's state; the request was not sent"));
      return;
    }
    exchange->body = std::move(applied->body);
    exchange->report.usage.key = applied->key;  // the project stays the request's
    exchange->report.usage.branch_id = applied->open_branch_id;
    exchange->report.usage.tokens_before = applied->tokens_before;
    exchange->report.usage.tokens_after = applied->tokens_after;
    exchange->report.usage.folds_new = applied->folds_new;
    for (SkipReason reason : applied->skipped) {
      ++exchange->report.usage.folds_skipped[SkipReasonName(reason)];
    }
    applied->body.clear();
    exchange->report.applied = std::move(*applied);
    std::optional<ConversationUpdate> deferred = std::move(exchange->report.applied.deferred);
    const ConversationKey key = exchange->report.applied.key;
    const uint64_t sequence = exchange->report.applied.sequence;
    const std::string thread_id = exchange->report.applied.thread_id;
    Forward(exchange);
    if (deferred) {
      AppliedRequest pending;
      pending.key = key;
      pending.sequence = sequence;
      pending.thread_id = thread_id;
      pending.deferred = std::move(deferred);
      context_.SaveFrontier(pending);
    }
  });
}

void ModelGateway::Forward(std::shared_ptr<Exchange> exchange) {
  transport::ClientRequest request;
  request.method = exchange->method;
  request.url = exchange->url;
  request.headers = exchange->headers;
  request.body = std::move(exchange->body);
  exchange->body.clear();

  transport::ClientCallbacks callbacks;
  callbacks.on_headers = [exchange](int status, HttpHeaders headers) {
    std::string content_type;
    HttpHeaders relayed;
    for (auto& [name, value] : headers) {
      if (absl::AsciiStrToLower(name) == "content-type") content_type = value;
      if (!DropResponseHeader(name)) relayed.emplace_back(std::move(name), std::move(value));
    }
    exchange->report.usage.status = status;
    exchange->usage = std::make_unique<UsageParser>(
        absl::StrContains(absl::AsciiStrToLower(content_type), "text/event-stream"),
        exchange->usage_format);
    {
      std::lock_guard<std::mutex> lock(exchange->mu);
      exchange->headers_sent = true;
    }
    exchange->responder->StartStream(status, content_type, std::move(relayed));
  };
  callbacks.on_data = [exchange](std::string_view chunk) {
    if (exchange->usage) exchange->usage->Feed(chunk);
    exchange->responder->Write(std::string(chunk));
  };
  callbacks.on_done = [this, exchange](absl::Status status) {
    bool headers_sent;
    {
      std::lock_guard<std::mutex> lock(exchange->mu);
      headers_sent = exchange->headers_sent;
      exchange->done = true;
      exchange->call.reset();  // the call holds these callbacks: no cycle past the end
    }
    ModelRequestReport& report = exchange->report;
    if (status.ok()) {
      report.outcome = report.usage.status < 400 ? "ok" : "upstream_error";
      exchange->responder->End();
    } else if (absl::IsCancelled(status)) {
      report.outcome = "cancelled";
      exchange->responder->Abort();
    } else if (headers_sent) {
      // Mid-answer: the client must see the answer break, not end cleanly.
      report.outcome = "dropped";
      base::LogWarn(absl::StrCat("model gateway: the answer from ", exchange->base_url,
                                 " broke off: ", status.message()));
      exchange->responder->Abort();
    } else {
      bool timeout = absl::IsDeadlineExceeded(status);
      report.outcome = timeout ? "timeout" : "unreachable";
      report.usage.status = timeout ? 504 : 502;
      exchange->responder->Respond(
          ErrorResponse(exchange->provider, report.usage.status,
                        absl::StrCat("contextd could not get an answer from the model provider at ",
                                     exchange->base_url, ": ", status.message())));
    }
    if (exchange->usage) {
      exchange->usage->Finish();
      const ProviderUsage& usage = exchange->usage->usage();
      report.usage.input_tokens = usage.input_tokens;
      report.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
      report.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
      report.usage.output_tokens = usage.output_tokens;
    }
    report.usage.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - exchange->start)
                                   .count();
    if (!report.usage.key.conversation.empty()) {
      if (absl::Status recorded = store_.RecordUsage(report.usage); !recorded.ok()) {
        base::LogWarn(absl::StrCat("model gateway: usage not recorded: ", recorded.ToString()));
      }
    }
    if (on_request_) on_request_(report);
  };
  transport::HttpClient& client =
      exchange->provider == Provider::kAnthropic ? anthropic_client_ : openai_client_;
  std::shared_ptr<transport::ClientCall> call =
      client.Start(std::move(request), std::move(callbacks));
  bool gone;
  {
    std::lock_guard<std::mutex> lock(exchange->mu);
    gone = exchange->gone;
    if (!gone && !exchange->done && call) exchange->call = call;
  }
  if (gone && call) call->Cancel();
}

}  // namespace contextd::model
