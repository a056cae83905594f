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
// An on/off header (x-contextd-auto-fold, x-contextd-memory): nullopt when absent.
absl::StatusOr<std::optional<bool>> SwitchHeader(std::string_view name, std::string_view value) {
  if (value.empty()) return std::optional<bool>();
  std::string v = absl::AsciiStrToLower(std::string(value));
  if (v == "on" || v == "true" || v == "1") return std::optional<bool>(true);
  if (v == "off" || v == "false" || v == "0") return std::optional<bool>(false);
  return absl::InvalidArgumentError(
      absl::StrCat("contextd: ", std::string(name), " must be on or off"));
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

// The headers of `request` that go to `provider`: all but the dropped ones; in team mode (a
// `provider_key` held by contextd) the client's credentials (its contextd token) are replaced by
// the provider key, in the provider's key header.
HttpHeaders ForwardedHeaders(const transport::HttpRequest& request, const ModelProvider& provider,
                             const std::string& provider_key) {
  HttpHeaders headers;
  for (const auto& [name, value] : request.Headers()) {
    if (DropRequestHeader(name)) continue;
    if (!provider_key.empty() &&
        (SameIgnoringCase(name, "x-api-key") || SameIgnoringCase(name, "authorization"))) {
      continue;
    }
    headers.emplace_back(name, value);
  }
  if (!provider_key.empty()) {
    headers.emplace_back(std::string(provider.key_header),
                         absl::StrCat(std::string(provider.key_prefix), provider_key));
  }
  return headers;
}

// The gateway's own error for `status`, in `provider`'s shape.
transport::HttpResponse ErrorResponse(const ModelProvider& provider, int status,
                                      std::string_view message) {
  // The message may echo what a client sent (a header, a path): the body stays valid UTF-8.
  const std::string clean = base::ToValidUtf8(message);
  transport::HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = provider.error_body(status, clean);
  return response;
}

}  // namespace

struct ModelGateway::Exchange {
  std::shared_ptr<transport::HttpResponder> responder;
  const Upstream* upstream = nullptr;  // where it goes; its base URL is named in errors
  std::string method;
  std::string target;
  std::string url;
  HttpHeaders headers;
  std::string body;
  std::chrono::steady_clock::time_point start;
  ModelRequestReport report;
  UsageFields usage_fields;
  std::unique_ptr<UsageParser> usage;
  std::mutex mu;  // guards the fields below
  bool gone = false;
  bool done = false;
  bool headers_sent = false;
  std::shared_ptr<transport::ClientCall> call;

  const ModelProvider& provider() const { return *upstream->provider; }
};

absl::StatusOr<std::unique_ptr<ModelGateway>> ModelGateway::Create(
    ModelGatewayOptions options, ContextManager& context, ConversationStore& store,
    const std::map<std::string, transport::HttpClient*>& clients,
    std::function<void(const ModelRequestReport&)> on_request) {
  for (const auto& [name, unused] : options.providers) {
    if (FindProvider(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("model gateway: no API forwards to a provider named '", name, "'"));
    }
  }
  std::map<std::string, Upstream, std::less<>> upstreams;
  for (const ModelProvider& provider : ModelProviders()) {
    const std::string name(provider.name);
    auto client = clients.find(name);
    if (client == clients.end() || client->second == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("model gateway: no client for provider '", name, "'"));
    }
    Upstream upstream;
    upstream.provider = &provider;
    upstream.client = client->second;
    upstream.base_url = std::string(provider.default_base_url);
    if (auto it = options.providers.find(name); it != options.providers.end()) {
      if (!it->second.base_url.empty()) upstream.base_url = it->second.base_url;
      upstream.api_key = it->second.api_key;
    }
    upstreams.emplace(name, std::move(upstream));
  }
  return std::unique_ptr<ModelGateway>(new ModelGateway(
      std::move(options), context, store, std::move(upstreams), std::move(on_request)));
}

ModelGateway::ModelGateway(ModelGatewayOptions options, ContextManager& context,
                           ConversationStore& store,
                           std::map<std::string, Upstream, std::less<>> upstreams,
                           std::function<void(const ModelRequestReport&)> on_request)
    : options_(std::move(options)),
      context_(context),
      store_(store),
      upstreams_(std::move(upstreams)),
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
  // handler: in the shape of the route's provider (the shared /v1/ route cannot tell, and
  // answers the way of the first provider).
  auto add = [&](std::string_view path, std::vector<std::string> methods,
                 transport::RouteMatch match, const ModelApiRow* api) {
    const ModelProvider& provider =
        api != nullptr ? *FindProvider(api->provider) : ModelProviders().front();
    transport::HttpRoute route;
    route.name = std::string(path);
    route.methods = std::move(methods);
    route.path = std::string(path);
    route.match = match;
    route.auth = transport::RouteAuth::kNone;
    route.max_body_bytes = options_.max_body_bytes;
    route.error_response = [&provider](int status, std::string_view message) {
      return ErrorResponse(provider, status, absl::StrCat("contextd: ", std::string(message)));
    };
    route.handler = [this, api](transport::HttpRequest request,
                                std::shared_ptr<transport::HttpResponder> responder) {
      Handle(api, std::move(request), std::move(responder));
    };
    routes.push_back(std::move(route));
  };
  for (const ModelApiRow& api : ModelApis()) {
    for (const ModelApiRoute& route : api.routes) {
      add(route.path, route.methods, transport::RouteMatch::kExact, &api);
    }
  }
  add("/v1/", {}, transport::RouteMatch::kPrefix, nullptr);
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

void ModelGateway::Handle(const ModelApiRow* route_api, transport::HttpRequest request,
                          std::shared_ptr<transport::HttpResponder> responder) {
  auto exchange = std::make_shared<Exchange>();
  exchange->start = std::chrono::steady_clock::now();
  exchange->responder = responder;
  exchange->method = std::string(request.method());
  exchange->target = std::string(request.target());
  // Which API the body speaks, when F(.) applies to it (the route's, for the method it folds);
  // the upstream it goes to (the route's API's provider, else the one its headers claim).
  const ModelApiRow* api =
      route_api != nullptr && request.method() == route_api->folded_method ? route_api : nullptr;
  const ModelProvider& provider =
      route_api != nullptr
          ? *FindProvider(route_api->provider)
          : ClaimingProvider([&](std::string_view header) { return request.HasHeader(header); });
  exchange->upstream = &upstreams_.find(provider.name)->second;
  exchange->usage_fields = api != nullptr ? api->usage : provider.passthrough_usage;
  std::string_view target = exchange->target;
  // A base URL that already ends in its version ("/v1", or a provider's own path).
  if (target.starts_with(provider.target_prefix_dropped)) {
    target.remove_prefix(provider.target_prefix_dropped.size());
  }
  exchange->url = JoinUrl(exchange->upstream->base_url, target);
  std::optional<Caller> caller = Admit(*exchange, request);
  if (!caller) return;
  exchange->headers = ForwardedHeaders(request, provider, exchange->upstream->api_key);
  exchange->body = request.TakeBody();
  exchange->report.usage.key.tenant = caller->tenant;
  exchange->report.usage.project = caller->project;
  exchange->report.usage.api = api != nullptr ? api->name : std::string(provider.name);
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
  if (api == nullptr) {
    Forward(std::move(exchange));
    return;
  }
  Post([this, api, exchange, caller = *std::move(caller)] { Fold(*api, exchange, caller); });
}

std::optional<ModelGateway::Caller> ModelGateway::Admit(const Exchange& exchange,
                                                        const transport::HttpRequest& request) {
  const ModelProvider& provider = exchange.provider();
  const bool team_mode = !exchange.upstream->api_key.empty();
  Caller caller;
  auto tenant = TenantOf(request, options_.tenant_tokens, team_mode);
  if (!tenant) {
    exchange.responder->Respond(ErrorResponse(
        provider, 401,
        team_mode ? "contextd: this gateway holds the provider key: authenticate with your "
                    "contextd token as x-api-key or Authorization: Bearer"
                  : "contextd: this gateway needs an x-contextd-token header with a known "
                    "token"));
    return std::nullopt;
  }
  caller.tenant = *std::move(tenant);
  caller.project = "default";
  if (std::string_view named = request.Header("x-contextd-project");
      !named.empty() && options_.project_of_header) {
    auto id = options_.project_of_header(named);
    if (!id.ok()) {
      exchange.responder->Respond(
          ErrorResponse(provider, 400, absl::StrCat("contextd: ", id.status().message())));
      return std::nullopt;
    }
    caller.project = *std::move(id);
  }
  auto auto_fold = SwitchHeader("x-contextd-auto-fold", request.Header("x-contextd-auto-fold"));
  // Lessons at a new task (lessons.h): off for this request's conversation with "off".
  auto lessons = SwitchHeader("x-contextd-memory", request.Header("x-contextd-memory"));
  for (const auto* parsed : {&auto_fold, &lessons}) {
    if (!parsed->ok()) {
      exchange.responder->Respond(
          ErrorResponse(provider, 400, std::string(parsed->status().message())));
      return std::nullopt;
    }
  }
  caller.auto_fold = *auto_fold;
  caller.lessons = lessons->value_or(true);
  caller.conversation = ConversationHeader(request);
  return caller;
}

void ModelGateway::Fold(const ModelApiRow& api, const std::shared_ptr<Exchange>& exchange,
                        const Caller& caller) {
  auto parsed =
      context_.Parse(api.api, caller.tenant, caller.conversation, std::move(exchange->body));
  if (!parsed.ok()) {
    exchange->responder->Respond(
        ErrorResponse(exchange->provider(), 400,
                      absl::StrCat("contextd: the request body is not a ", std::string(api.title),
                                   " request: ", parsed.status().message())));
    return;
  }
  std::shared_ptr<ModelRequest> messages = *std::move(parsed);
  // A standalone compaction (/v1/responses/compact) summarises the conversation (branch_view.h).
  std::string_view path = std::string_view(exchange->target).substr(0, exchange->target.find('?'));
  if (path.ends_with("/compact")) messages->MarkSummary();
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
  auto applied = context_.Apply(caller.tenant, caller.conversation, messages, WallMs(),
                                caller.auto_fold, caller.project, caller.lessons);
  messages.reset();  // the context manager keeps it for the conversation's next request
  if (!applied.ok()) {
    base::LogError(
        absl::StrCat("model gateway: conversation state: ", applied.status().ToString()));
    exchange->responder->Respond(ErrorResponse(
        exchange->provider(), 500,
        "contextd: could not keep this conversation's state; the request was not sent"));
    return;
  }
  exchange->body = std::move(applied->body);
  UsageRecord& usage = exchange->report.usage;
  usage.key = applied->key;  // the project stays the request's
  usage.branch_id = applied->open_branch_id;
  usage.tokens_before = applied->tokens_before;
  usage.tokens_after = applied->tokens_after;
  usage.folds_new = applied->folds_new;
  usage.branch_view = applied->view;
  usage.view_tokens_spared = applied->view_tokens_spared;
  for (SkipReason reason : applied->skipped) ++usage.folds_skipped[SkipReasonName(reason)];
  applied->body.clear();
  exchange->report.applied = std::move(*applied);
  AppliedRequest pending;
  pending.deferred = std::move(exchange->report.applied.deferred);
  pending.key = exchange->report.applied.key;
  pending.sequence = exchange->report.applied.sequence;
  pending.thread_id = exchange->report.applied.thread_id;
  Forward(exchange);
  if (pending.deferred) context_.SaveFrontier(pending);
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
        exchange->usage_fields);
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
      base::LogWarn(absl::StrCat("model gateway: the answer from ", exchange->upstream->base_url,
                                 " broke off: ", status.message()));
      exchange->responder->Abort();
    } else {
      bool timeout = absl::IsDeadlineExceeded(status);
      report.outcome = timeout ? "timeout" : "unreachable";
      report.usage.status = timeout ? 504 : 502;
      exchange->responder->Respond(
          ErrorResponse(exchange->provider(), report.usage.status,
                        absl::StrCat("contextd could not get an answer from the model provider at ",
                                     exchange->upstream->base_url, ": ", status.message())));
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
  std::shared_ptr<transport::ClientCall> call =
      exchange->upstream->client->Start(std::move(request), std::move(callbacks));
  bool gone;
  {
    std::lock_guard<std::mutex> lock(exchange->mu);
    gone = exchange->gone;
    if (!gone && !exchange->done && call) exchange->call = call;
  }
  if (gone && call) call->Cancel();
}

}  // namespace contextd::model
