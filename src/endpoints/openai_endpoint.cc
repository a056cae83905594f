#include "endpoints/openai_endpoint.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "base/str_cat.h"
#include "transport/http_url.h"

namespace contextd::endpoints {
namespace {

// How long a cancelled call may take to report; Cancel closes the connection, so it is prompt.
constexpr std::chrono::seconds kCancelGrace{5};
// Bytes of an error answer quoted in the Status message.
constexpr size_t kQuotedErrorBytes = 300;

std::string_view TrimSlashes(std::string_view s) {
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

// The first bytes of an error answer, on one line, for a Status message.
std::string Quote(std::string_view body) {
  size_t n = std::min(body.size(), kQuotedErrorBytes);
  while (n < body.size() && n > 0 && (static_cast<unsigned char>(body[n]) & 0xC0) == 0x80) --n;
  std::string out;
  for (char c : body.substr(0, n)) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  }
  if (body.size() > kQuotedErrorBytes) out += "...";
  return out;
}

// What one call reports, shared by its callbacks and the waiting caller (the worker may still
// report after the caller gave up).
struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  int http_status = 0;
  std::string body;
  bool too_large = false;
  bool done = false;
  absl::Status result;
};

}  // namespace

std::string EndpointUrl(std::string_view base_url, std::string_view path) {
  std::string_view base = TrimSlashes(base_url);
  constexpr std::string_view kV1 = "/v1";
  const bool has_v1 = base.size() >= kV1.size() && base.substr(base.size() - kV1.size()) == kV1;
  return base::StrCat(base, has_v1 ? "" : "/v1", path);
}

absl::Status ValidateEndpointOptions(const OpenAiEndpointOptions& options) {
  absl::StatusOr<transport::HttpUrl> url = transport::ParseHttpUrl(options.base_url);
  if (!url.ok()) {
    return absl::InvalidArgumentError(base::StrCat(
        "base_url must be http[s]://host[:port][/prefix], got '", options.base_url, "'"));
  }
  if (options.base_url.find_first_of("?# \t\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(base::StrCat(
        "base_url must not hold a query, a fragment or spaces, got '", options.base_url, "'"));
  }
  if (options.model.empty()) return absl::InvalidArgumentError("model must be set");
  if (options.timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        base::StrCat("timeout_ms must be positive, got ", options.timeout_ms));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<transport::HttpClient>> MakeEndpointClient(
    const OpenAiEndpointOptions& options) {
  transport::HttpClientOptions o;
  o.ca_file = options.ca_file;
  const std::chrono::milliseconds timeout(std::max<int64_t>(options.timeout_ms, 1));
  o.connect_timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(10));
  o.response_timeout = timeout;
  o.read_timeout = timeout;
  return transport::HttpClient::Create(std::move(o));
}

OpenAiEndpoint::OpenAiEndpoint(OpenAiEndpointOptions options, transport::HttpClient& client,
                               std::string_view path, size_t max_answer_bytes)
    : options_(std::move(options)),
      client_(client),
      url_(EndpointUrl(options_.base_url, path)),
      max_answer_bytes_(max_answer_bytes) {
  if (absl::Status s = ValidateEndpointOptions(options_); !s.ok()) {
    ready_ = absl::FailedPreconditionError(base::StrCat(url_, ": ", s.message()));
    return;
  }
  if (!options_.api_key_env.empty()) {
    // Read once, here; nothing in contextd sets environment variables while it runs.
    const char* key = std::getenv(options_.api_key_env.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (key == nullptr || *key == '\0') {
      ready_ = absl::FailedPreconditionError(base::StrCat(url_, ": the environment variable ",
                                                          options_.api_key_env,
                                                          " (api_key_env) is unset or empty"));
      return;
    }
    authorization_ = base::StrCat("Bearer ", key);
  }
}

absl::StatusOr<std::string> OpenAiEndpoint::PostJson(std::string json) const {
  if (!ready_.ok()) return ready_;
  transport::ClientRequest request;
  request.method = "POST";
  request.url = url_;
  request.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  if (!authorization_.empty()) request.headers.emplace_back("Authorization", authorization_);
  request.body = std::move(json);

  auto state = std::make_shared<CallState>();
  transport::ClientCallbacks callbacks;
  callbacks.on_headers = [state](int status, const transport::HttpHeaders&) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->http_status = status;
  };
  callbacks.on_data = [state, limit = max_answer_bytes_](std::string_view chunk) {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->too_large) return;
    if (state->body.size() + chunk.size() > limit) {
      state->too_large = true;  // the caller cancels the call
      state->body.clear();
      state->cv.notify_all();
      return;
    }
    state->body.append(chunk.data(), chunk.size());
  };
  callbacks.on_done = [state](absl::Status status) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->done = true;
    state->result = std::move(status);
    state->cv.notify_all();
  };

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  std::shared_ptr<transport::ClientCall> call = client_.Start(std::move(request), callbacks);
  std::unique_lock<std::mutex> lock(state->mu);
  const bool ended =
      state->cv.wait_until(lock, deadline, [&] { return state->done || state->too_large; });
  if (!state->done) {
    lock.unlock();
    if (call != nullptr) call->Cancel();
    lock.lock();
    state->cv.wait_for(lock, kCancelGrace, [&] { return state->done; });
  }
  if (!ended) {
    return absl::DeadlineExceededError(
        base::StrCat(url_, ": no complete answer within ", options_.timeout_ms, " ms"));
  }
  if (state->too_large) {
    return absl::InvalidArgumentError(
        base::StrCat(url_, ": the answer is longer than ", max_answer_bytes_, " bytes"));
  }
  if (!state->result.ok()) {
    const absl::Status& r = state->result;
    if (absl::IsDeadlineExceeded(r)) {
      return absl::DeadlineExceededError(base::StrCat(url_, ": ", r.message()));
    }
    if (absl::IsInvalidArgument(r)) {  // a URL the client refuses: a configuration fault
      return absl::FailedPreconditionError(base::StrCat(url_, ": ", r.message()));
    }
    return absl::UnavailableError(base::StrCat(url_, ": ", r.message()));
  }
  const int status = state->http_status;
  if (status >= 200 && status < 300) return std::move(state->body);
  const std::string what = base::StrCat(url_, " answered HTTP ", status, ": ", Quote(state->body));
  if (status == 408 || status == 429 || status >= 500) return absl::UnavailableError(what);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(what);
  return absl::FailedPreconditionError(what);
}

}  // namespace contextd::endpoints
