#include "transport/upstream_http_client.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "base/foreign_text.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"
#include "transport/http_url.h"
#include "transport/sse_reader.h"

namespace contextd::transport {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The value of header `name` (any case); "" when absent.
std::string HeaderValue(const HttpHeaders& headers, std::string_view name) {
  const std::string want = Lower(name);
  for (const auto& [k, v] : headers) {
    if (Lower(k) == want) return v;
  }
  return {};
}

// Sets header `name` to `value`, replacing any of that name (any case).
void SetHeader(HttpHeaders& headers, const std::string& name, std::string value) {
  const std::string want = Lower(name);
  std::erase_if(headers, [&](const auto& field) { return Lower(field.first) == want; });
  headers.emplace_back(name, std::move(value));
}

// The method of a serialized JSON-RPC message ("" for responses and unparseable text).
std::string MethodOf(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("method") || !json["method"].is_string()) return {};
  return json["method"].get<std::string>();
}

}  // namespace

// A request's ClientCall, which its own callbacks may cancel before Start has returned it.
class UpstreamHttpChannel::CallHolder {
 public:
  void Set(std::shared_ptr<ClientCall> call) {
    std::lock_guard<std::mutex> lock(mu_);
    call_ = std::move(call);
    if (cancel_ && call_) call_->Cancel();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
    if (call_) call_->Cancel();
  }

 private:
  std::mutex mu_;
  std::shared_ptr<ClientCall> call_;
  bool cancel_ = false;
};

// One POST. Its callbacks run one at a time on the client's worker.
struct UpstreamHttpChannel::PostState {
  explicit PostState(size_t max_event_bytes) : reader(max_event_bytes) {}

  std::string body;
  bool initialized = false;  // the body is notifications/initialized
  CallHolder call;
  bool connected = false;  // the request went out on a connection
  bool reused = false;     // ... a pooled one
  int status = 0;          // of the answer, once its headers arrived
  bool sse = false;
  bool too_big = false;  // a JSON answer over max_message_bytes: the call was cancelled
  size_t total = 0;
  std::string pending;  // a JSON answer
  SseReader reader;
};

absl::StatusOr<std::unique_ptr<UpstreamHttpChannel>> UpstreamHttpChannel::Start(
    UpstreamHttpOptions options, UpstreamCallbacks callbacks) {
  auto url = ParseHttpUrl(options.url);
  if (!url.ok()) return url.status();
  if (!url->tls && !options.ca_file.empty()) {
    return absl::InvalidArgumentError("ca_file applies only to https upstream urls");
  }
  HttpClientOptions client_options;
  client_options.ca_file = options.ca_file;
  // A tools/call may run for as long as the tool needs, a GET stream lasts as long as the
  // session: the upstream client's timeouts bound a request, and Close ends them all.
  client_options.response_timeout = std::chrono::milliseconds::zero();
  client_options.read_timeout = std::chrono::milliseconds::zero();
  auto client = HttpClient::Create(std::move(client_options));
  if (!client.ok()) return client.status();
  return std::unique_ptr<UpstreamHttpChannel>(
      new UpstreamHttpChannel(std::move(options), std::move(client).value(), std::move(callbacks)));
}

UpstreamHttpChannel::UpstreamHttpChannel(UpstreamHttpOptions options,
                                         std::unique_ptr<HttpClient> client,
                                         UpstreamCallbacks callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)), client_(std::move(client)) {}

UpstreamHttpChannel::~UpstreamHttpChannel() { Close(); }

HttpHeaders UpstreamHttpChannel::Headers(HttpHeaders own) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!session_id_.empty()) SetHeader(own, "Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) SetHeader(own, "MCP-Protocol-Version", protocol_version_);
  }
  SetHeader(own, "User-Agent", "contextd-gateway");
  for (const auto& [k, v] : options_.headers) SetHeader(own, k, v);
  return own;
}

bool UpstreamHttpChannel::StartRequest(ClientRequest request, ClientCallbacks callbacks,
                                       CallHolder& holder) {
  std::lock_guard<std::mutex> client_lock(client_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || client_ == nullptr) return false;
  }
  holder.Set(client_->Start(std::move(request), std::move(callbacks)));
  return true;
}

absl::Status UpstreamHttpChannel::Send(std::string_view line) {
  auto post = std::make_shared<PostState>(options_.max_message_bytes);
  post->body = std::string(line);
  // Only "notifications/initialized" matters here: most bodies (tool arguments can be large)
  // are not parsed for it.
  post->initialized = line.find("notifications/initialized") != std::string_view::npos &&
                      MethodOf(post->body) == "notifications/initialized";
  ClientRequest request;
  request.method = "POST";
  request.url = options_.url;
  request.headers = Headers(
      {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}});
  request.body = post->body;
  // A tool call may act on the world: it is not sent twice because a pooled connection closed
  // after it went out (anything that mentions tools/call counts, batches included).
  request.retry_unanswered = line.find("tools/call") == std::string_view::npos;

  ClientCallbacks callbacks;
  callbacks.on_connected = [post](bool reused) {
    post->connected = true;
    post->reused = reused;
  };
  callbacks.on_headers = [this, post](int status, HttpHeaders headers) {
    post->status = status;
    std::string session = HeaderValue(headers, "Mcp-Session-Id");
    if (!session.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_ = std::move(session);
    }
    post->sse =
        Lower(HeaderValue(headers, "Content-Type")).find("text/event-stream") != std::string::npos;
  };
  // SSE events are delivered as they complete, each bounded by the reader; a JSON body is
  // bounded as a whole (a long call may send many progress events before its result).
  callbacks.on_data = [this, post](std::string_view chunk) {
    if (post->too_big) return;
    post->total += chunk.size();
    if (post->sse) {
      post->reader.Feed(chunk, [this](std::string data) { Deliver(std::move(data)); });
    } else if (post->total > options_.max_message_bytes) {
      post->too_big = true;  // no need to read the rest (it may never end)
      post->pending.clear();
      post->call.Cancel();
    } else {
      post->pending.append(chunk);
    }
  };
  callbacks.on_done = [this, post](absl::Status status) { Posted(*post, status); };
  if (!StartRequest(std::move(request), std::move(callbacks), post->call)) {
    return absl::UnavailableError("upstream connection is closed");
  }
  return absl::OkStatus();
}

void UpstreamHttpChannel::Posted(PostState& post, const absl::Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (close_reported_ && absl::IsCancelled(status)) return;  // Close, or the channel ended
  }
  const std::string& body = post.body;
  if (!status.ok() && post.status == 0) {
    if (!post.connected) {
      // The channel ends; the upstream client fails every request in flight with the reason.
      Closed(std::string(status.message()));
      return;
    }
    std::string why = base::StrCat("upstream connection failed: ", status.message());
    FailRequest(body, why);
    // A pooled connection that the server closed as the request went out (it was not sent
    // again: see Send) says nothing of the server: the next request connects afresh.
    if (!post.reused) Closed(why);
    return;
  }
  if (post.status == 404) {
    std::string why = "upstream session expired (HTTP 404)";
    FailRequest(body, why);
    Closed(why);
    return;
  }
  if (post.status >= 400) {
    FailRequest(body, base::StrCat("upstream answered HTTP ", post.status));
    return;
  }
  if (post.too_big) {
    FailRequest(body,
                base::StrCat("upstream answer larger than ", options_.max_message_bytes, " bytes"));
    return;
  }
  if (!status.ok()) {
    // Cut off: a request still waiting for its answer fails now instead of at its timeout.
    FailRequest(body, base::StrCat("upstream connection failed: ", status.message()));
    return;
  }
  if (post.sse) {
    post.reader.Finish([this](std::string data) { Deliver(std::move(data)); });
    if (post.reader.dropped() > 0) {
      // An event over the limit may have been the answer: fail the request now rather than at
      // its timeout (if the answer did arrive, the client ignores this late error).
      FailRequest(body, base::StrCat("upstream answer event larger than ",
                                     options_.max_message_bytes, " bytes"));
    }
  } else if (!post.pending.empty()) {
    Deliver(std::move(post.pending));
  }
  if (post.initialized) StartStream();
}

void UpstreamHttpChannel::Close(int /*grace_ms*/) {
  std::unique_ptr<HttpClient> client;
  std::thread stream;
  {
    std::lock_guard<std::mutex> client_lock(client_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    close_reported_ = true;  // the owner closed it: nothing to report
    client = std::move(client_);
    stream.swap(stream_thread_);
  }
  cv_.notify_all();
  // Cancels the POSTs in flight and the GET stream (each reports Cancelled) and joins the
  // client's workers.
  client.reset();
  if (stream.joinable()) stream.join();
}

void UpstreamHttpChannel::Deliver(std::string message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (protocol_version_.empty()) {
      auto json = nlohmann::json::parse(message, nullptr, false);
      if (json.is_object() && json.contains("result") && json["result"].is_object() &&
          json["result"].contains("protocolVersion") &&
          json["result"]["protocolVersion"].is_string()) {
        protocol_version_ = json["result"]["protocolVersion"].get<std::string>();
      }
    }
  }
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_line) callbacks_.on_line(std::move(message));
}

void UpstreamHttpChannel::FailRequest(const std::string& body, const std::string& why) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object() || !json.contains("id") || !json.contains("method")) return;
  nlohmann::json error = {
      {"jsonrpc", "2.0"}, {"id", json["id"]}, {"error", {{"code", -32603}, {"message", why}}}};
  Deliver(base::DumpJson(error));
}

void UpstreamHttpChannel::Closed(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    if (close_reported_) return;
    close_reported_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> lock(callback_mu_);
  if (callbacks_.on_closed) callbacks_.on_closed(reason);
}

void UpstreamHttpChannel::StartStream() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || stream_started_) return;
  stream_started_ = true;
  stream_thread_ =
      std::thread([this] { base::RunLoopCatching("upstream", [this] { StreamLoop(); }); });
}

void UpstreamHttpChannel::StreamLoop() {
  std::string last_event_id;
  std::chrono::milliseconds delay = options_.stream_retry_initial;
  for (;;) {
    std::string why;
    switch (ReadStream(last_event_id, delay, why)) {
      case StreamEnd::kClosed:
        return;
      case StreamEnd::kNotOffered:
        base::LogInfo(base::StrCat("upstream ", options_.log_name,
                                   ": no standalone GET stream offered (HTTP 405)"));
        return;
      case StreamEnd::kGone:
        Closed(why);
        return;
      case StreamEnd::kDropped:
        break;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, delay, [this] { return closed_; })) return;
    delay = std::min(options_.stream_retry_max, delay * 2);
  }
}

UpstreamHttpChannel::StreamEnd UpstreamHttpChannel::ReadStream(std::string& last_event_id,
                                                               std::chrono::milliseconds& delay,
                                                               std::string& why) {
  // Shared with the callbacks, which run on the client's worker while this thread waits for
  // on_done (`ended`, under mu_): what they write is read here only after that.
  struct StreamState {
    explicit StreamState(size_t max_event_bytes) : reader(max_event_bytes) {}
    CallHolder call;
    bool connected = false;
    StreamEnd end = StreamEnd::kDropped;
    bool streaming = false;  // answered 200 text/event-stream
    bool delivered = false;
    int64_t dropped = 0;
    SseReader reader;
    bool ended = false;
    absl::Status status;
  };
  auto state = std::make_shared<StreamState>(options_.max_message_bytes);
  HttpHeaders own = {{"Accept", "text/event-stream"}};
  if (!last_event_id.empty()) own.emplace_back("Last-Event-ID", last_event_id);
  ClientRequest request;
  request.method = "GET";
  request.url = options_.url;
  request.headers = Headers(std::move(own));

  ClientCallbacks callbacks;
  callbacks.on_connected = [state](bool) { state->connected = true; };
  callbacks.on_headers = [this, state, &why](int status, HttpHeaders headers) {
    if (status == 405) {
      state->end = StreamEnd::kNotOffered;
    } else if (status == 404) {
      why = "upstream session expired (HTTP 404 on the GET stream)";
      state->end = StreamEnd::kGone;
    } else {
      std::string content_type = Lower(HeaderValue(headers, "Content-Type"));
      state->streaming =
          status == 200 && content_type.find("text/event-stream") != std::string::npos;
      if (!state->streaming) {
        // 409 (the server still holds the old stream), 5xx, ...: try again later.
        base::LogWarn(base::StrCat("upstream ", options_.log_name, ": GET stream answered HTTP ",
                                   status, " ", content_type));
      }
    }
    // Only a stream's body is read.
    if (!state->streaming) state->call.Cancel();
  };
  callbacks.on_data = [this, state, &last_event_id, &delay](std::string_view chunk) {
    if (!state->streaming) return;
    state->reader.Feed(chunk, [&](std::string data) {
      state->delivered = true;
      Deliver(std::move(data));
    });
    // The backoff restarts only once the stream delivered something: a server that answers
    // 200 and closes at once is retried with a growing delay, not every stream_retry_initial.
    if (state->delivered) delay = options_.stream_retry_initial;
    if (!state->reader.last_event_id().empty()) last_event_id = state->reader.last_event_id();
    if (state->reader.retry_ms()) {
      // The server's say, within our bounds: "retry: 0" must not make a reconnect loop spin.
      delay = std::clamp(std::chrono::milliseconds(*state->reader.retry_ms()),
                         options_.stream_retry_initial, options_.stream_retry_max);
    }
    if (state->reader.dropped() != state->dropped) {
      state->dropped = state->reader.dropped();
      base::LogWarn(base::StrCat("upstream ", options_.log_name,
                                 ": dropped a GET stream event larger than ",
                                 options_.max_message_bytes, " bytes"));
    }
  };
  callbacks.on_done = [this, state](absl::Status status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      state->ended = true;
      state->status = std::move(status);
    }
    cv_.notify_all();
  };
  if (!StartRequest(std::move(request), std::move(callbacks), state->call)) {
    return StreamEnd::kClosed;
  }
  std::unique_lock<std::mutex> lock(mu_);
  // Close cancels the request: it ends too.
  cv_.wait(lock, [&] { return state->ended; });
  if (closed_) return StreamEnd::kClosed;
  if (!state->connected && !state->status.ok()) {
    // Refused or untrusted: the upstream is down (or replaced); the client restarts it.
    why = std::string(state->status.message());
    return StreamEnd::kGone;
  }
  return state->end;
}

}  // namespace contextd::transport
