// OpenAiEmbedder: the ReasoningBank's Embedder over an OpenAI-compatible /v1/embeddings endpoint:
// POST {"model": ..., "input": [texts]} and read data[].embedding in index order. Remembers the
// dimension of the first answer and refuses answers of another. Thread-safe: Embed may run on
// many threads at once; each call blocks its thread until the answer or the timeout.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "endpoints/openai_endpoint.h"
#include "memory/embedder.h"
#include "transport/http_client.h"

namespace contextd::endpoints {

class OpenAiEmbedder final : public memory::Embedder {
 public:
  // Answers above this size are refused (a batch of 1,000 texts of 3,072 dimensions is ~60 MiB).
  static constexpr size_t kMaxAnswerBytes = 64u << 20;

  // `client` must outlive the embedder (MakeEndpointClient makes one for `options`).
  OpenAiEmbedder(OpenAiEndpointOptions options, transport::HttpClient& client);

  // One vector per text, in order; an empty list makes no request. Errors: InvalidArgument for a
  // malformed answer (see ParseEmbeddingsAnswer) or one whose dimension differs from earlier
  // answers'; Unavailable, DeadlineExceeded, PermissionDenied and FailedPrecondition as
  // OpenAiEndpoint::PostJson. Never throws.
  absl::StatusOr<std::vector<std::vector<float>>> Embed(
      const std::vector<std::string>& texts) override;

  // options.model.
  std::string model() const override;

  // The dimension of the vectors answered so far; 0 before the first answer.
  size_t dimension() const { return dimension_.load(); }

 private:
  OpenAiEndpoint endpoint_;
  std::atomic<size_t> dimension_{0};
};

}  // namespace contextd::endpoints
