// OpenAiEndpoint: one OpenAI-compatible HTTP endpoint the ReasoningBank calls (/v1/embeddings,
// /v1/chat/completions): its options, the rule that turns a base URL into the endpoint's URL, and
// a blocking JSON POST over the shared, pooled transport::HttpClient with an overall deadline.
// Thread-safe: PostJson may run on many threads at once (each call blocks its own thread, so never
// call it on the engine executor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/http_client.h"

namespace contextd::endpoints {

// Where and how to reach an OpenAI-compatible endpoint (OpenAI, a local llama.cpp or vLLM server,
// Ollama's /v1, ...).
struct OpenAiEndpointOptions {
  // "http[s]://host[:port][/prefix]". The API path is appended after "/v1", which is added unless
  // the base URL already ends with "/v1": "http://h:8080" and "http://h:8080/v1" (trailing '/'
  // or not) both call http://h:8080/v1/embeddings; "https://h/openai/v1" calls
  // https://h/openai/v1/embeddings.
  std::string base_url;
  // The model named in every request (and the name vectors are stored under).
  std::string model;
  // Name of the environment variable that holds the API key, sent as "Authorization: Bearer
  // <key>"; read once, at construction. Empty: no Authorization header.
  std::string api_key_env;
  // The whole exchange (connect, send, answer) must end within this; DeadlineExceeded otherwise.
  int64_t timeout_ms = 30'000;
  // https: a PEM file of CA certificates to trust instead of the system's. Used by
  // MakeEndpointClient; a client passed in brings its own trust store.
  std::string ca_file;
};

// The URL of API path `path` ("/embeddings", "/chat/completions") under `base_url`, by the rule
// above.
std::string EndpointUrl(std::string_view base_url, std::string_view path);

// OK if the options can make requests: an http(s) base URL with a host, a model, a positive
// timeout. InvalidArgument naming the field otherwise (for the config parser).
absl::Status ValidateEndpointOptions(const OpenAiEndpointOptions& options);

// A client for these options (their ca_file; connect timeout min(timeout_ms, 10 s)), for callers
// that do not share the model gateway's. InvalidArgument if the trust store cannot be loaded.
absl::StatusOr<std::unique_ptr<transport::HttpClient>> MakeEndpointClient(
    const OpenAiEndpointOptions& options);

class OpenAiEndpoint {
 public:
  // Calls EndpointUrl(options.base_url, path). `client` must outlive this object. Answers longer
  // than `max_answer_bytes` are refused.
  OpenAiEndpoint(OpenAiEndpointOptions options, transport::HttpClient& client,
                 std::string_view path, size_t max_answer_bytes);

  // POSTs `json` (Content-Type: application/json) and returns the body of a 2xx answer. Errors,
  // their messages naming the URL (never the key):
  // - FailedPrecondition: the options are invalid (see ValidateEndpointOptions), or api_key_env
  //   names a variable that was unset or empty at construction;
  // - Unavailable: DNS, connection refused, TLS, a broken connection; an answer 408, 429 or 5xx;
  // - DeadlineExceeded: no complete answer within timeout_ms (or the client's own timeouts);
  // - PermissionDenied: an answer 401 or 403 (a missing or wrong key);
  // - FailedPrecondition: any other non-2xx answer (a wrong path or model: 400, 404, ...);
  // - InvalidArgument: an answer longer than max_answer_bytes.
  // Never throws.
  absl::StatusOr<std::string> PostJson(std::string json) const;

  const OpenAiEndpointOptions& options() const { return options_; }
  const std::string& url() const { return url_; }

 private:
  const OpenAiEndpointOptions options_;
  transport::HttpClient& client_;
  const std::string url_;
  const size_t max_answer_bytes_;
  absl::Status ready_;         // FailedPrecondition when the options cannot make requests
  std::string authorization_;  // "Bearer <key>", or empty
};

}  // namespace contextd::endpoints
