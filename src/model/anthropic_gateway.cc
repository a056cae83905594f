#include "model/anthropic_gateway.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/ids.h"
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
         n.starts_with("proxy-") || n == "accept-encoding" || n == "x-contextd-token";
}

bool DropResponseHeader(std::string_view name) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  return n == "content-length" || n == "transfer-encoding" || n == "connection" ||
         n == "keep-alive" || n == "content-type";
}

std::string JoinUrl(std::string_view base, std::string_view target) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  return absl::StrCat(std::string(base), std::string(target));
}

transport::HttpResponse ErrorResponse(int status, std::string_view type,
                                      std::string_view message) {
  transport::HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = AnthropicError(type, message);
  return response;
}

}  // namespace

std::string AnthropicError(std::string_view type, std::string_view message) {
  return absl::StrCat("{\"type\":\"error\",\"error\":{\"type\":", QuoteJsonString(type),
                      ",\"message\":", QuoteJsonString(message), "}}");
}

struct AnthropicGateway::Exchange {
  std::shared_ptr<transport::HttpResponder> responder;
  std::string method;
  std::string target;
  std::string url;
  HttpHeaders headers;
  std::string body;
  std::chrono::steady_clock::time_point start;
  ModelRequestReport report;
  std::unique_ptr<UsageParser> usage;
  std::mutex mu;  // guards the fields below
  bool gone = false;
  bool done = false;
  bool headers_sent = false;
  std::shared_ptr<transport::ClientCall> call;
};

AnthropicGateway::AnthropicGateway(AnthropicGatewayOptions options, ContextManager& context,
                                   ConversationStore& store, transport::HttpClient& client,
                                   std::function<void(const ModelRequestReport&)> on_request)
    : options_(std::move(options)), context_(context), store_(store), client_(client),
      on_request_(std::move(on_request)) {
  for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

AnthropicGateway::~AnthropicGateway() { Stop(); }

void AnthropicGateway::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void AnthropicGateway::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void AnthropicGateway::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

std::vector<transport::HttpRoute> AnthropicGateway::Routes() {
  std::vector<transport::HttpRoute> routes;
  auto error_response = [](int status, std::string_view message) {
    return ErrorResponse(status, status == 413 ? "request_too_large" : "invalid_request_error",
                         absl::StrCat("contextd: ", std::string(message)));
  };
  auto handler = [this](transport::HttpRequest request,
                        std::shared_ptr<transport::HttpResponder> responder) {
    HandleMessages(std::move(request), std::move(responder));
  };
  for (const char* path : {"/v1/messages", "/v1/messages/count_tokens"}) {
    transport::HttpRoute route;
    route.name = path;
    route.methods = {"POST"};
    route.path = path;
    route.auth = transport::RouteAuth::kNone;
    route.max_body_bytes = options_.max_body_bytes;
    route.error_response = error_response;
    route.handler = handler;
    routes.push_back(std::move(route));
  }
  transport::HttpRoute rest;
  rest.name = "/v1/";
  rest.path = "/v1/";
  rest.match = transport::RouteMatch::kPrefix;
  rest.auth = transport::RouteAuth::kNone;
  rest.max_body_bytes = options_.max_body_bytes;
  rest.error_response = error_response;
  rest.handler = handler;
  routes.push_back(std::move(rest));
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

void AnthropicGateway::HandleMessages(transport::HttpRequest request,
                                      std::shared_ptr<transport::HttpResponder> responder) {
  auto exchange = std::make_shared<Exchange>();
  exchange->start = std::chrono::steady_clock::now();
  exchange->responder = responder;
  exchange->method = std::string(request.method());
  exchange->target = std::string(request.target());
  exchange->url = JoinUrl(options_.base_url, exchange->target);
  std::string tenant = "local";
  if (!options_.tenant_tokens.empty()) {
    auto it = options_.tenant_tokens.find(std::string(request.Header("x-contextd-token")));
    if (it == options_.tenant_tokens.end()) {
      responder->Respond(ErrorResponse(
          401, "authentication_error",
          "contextd: this gateway needs an x-contextd-token header with a known token"));
      return;
    }
    tenant = it->second;
  }
  for (const auto& [name, value] : request.Headers()) {
    if (!DropRequestHeader(name)) exchange->headers.emplace_back(name, value);
  }
  std::string session(request.Header("x-claude-code-session-id"));
  bool apply = request.method() == "POST" && (request.path() == "/v1/messages" ||
                                             request.path() == "/v1/messages/count_tokens");
  exchange->body = request.TakeBody();
  exchange->report.usage.key.tenant = tenant;
  exchange->report.usage.api = "anthropic";
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
  if (!apply) {
    Forward(std::move(exchange));
    return;
  }
  Post([this, exchange, tenant, session] {
    auto parsed = context_.Parse(tenant, session, std::move(exchange->body));
    if (!parsed.ok()) {
      exchange->responder->Respond(ErrorResponse(
          400, "invalid_request_error",
          absl::StrCat("contextd: the request body is not a Messages request: ",
                       parsed.status().message())));
      return;
    }
    std::shared_ptr<AnthropicRequest> messages = *std::move(parsed);
    exchange->report.usage.model = messages->model();
    auto applied = context_.Apply(tenant, session, messages, WallMs());
    messages.reset();  // the context manager keeps it for the conversation's next request
    if (!applied.ok()) {
      base::LogError(absl::StrCat("model gateway: conversation state: ", applied.status().ToString()));
      exchange->responder->Respond(ErrorResponse(
          500, "api_error",
          "contextd: could not keep this conversation's state; the request was not sent"));
      return;
    }
    exchange->body = std::move(applied->body);
    exchange->report.usage.key = applied->key;
    exchange->report.usage.branch_id = applied->open_branch_id;
    exchange->report.usage.tokens_before = applied->tokens_before;
    exchange->report.usage.tokens_after = applied->tokens_after;
    applied->body.clear();
    exchange->report.applied = std::move(*applied);
    std::optional<ConversationUpdate> deferred = std::move(exchange->report.applied.deferred);
    const ConversationKey key = exchange->report.applied.key;
    const uint64_t sequence = exchange->report.applied.sequence;
    Forward(exchange);
    if (deferred) {
      AppliedRequest pending;
      pending.key = key;
      pending.sequence = sequence;
      pending.deferred = std::move(deferred);
      context_.SaveFrontier(pending);
    }
  });
}

void AnthropicGateway::Forward(std::shared_ptr<Exchange> exchange) {
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
        absl::StrContains(absl::AsciiStrToLower(content_type), "text/event-stream"));
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
      base::LogWarn(absl::StrCat("model gateway: the answer from ", options_.base_url,
                                 " broke off: ", status.message()));
      exchange->responder->Abort();
    } else {
      bool timeout = absl::IsDeadlineExceeded(status);
      report.outcome = timeout ? "timeout" : "unreachable";
      report.usage.status = timeout ? 504 : 502;
      exchange->responder->Respond(ErrorResponse(
          report.usage.status, timeout ? "timeout_error" : "api_error",
          absl::StrCat("contextd could not get an answer from the model provider at ",
                       options_.base_url, ": ", status.message())));
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
      client_.Start(std::move(request), std::move(callbacks));
  bool gone;
  {
    std::lock_guard<std::mutex> lock(exchange->mu);
    gone = exchange->gone;
    if (!gone && !exchange->done && call) exchange->call = call;
  }
  if (gone && call) call->Cancel();
}

}  // namespace contextd::model
