#include "endpoints/openai_embedder.h"

#include <utility>

#include "base/status_macros.h"
#include "base/str_cat.h"
#include "endpoints/openai_answers.h"

namespace contextd::endpoints {

OpenAiEmbedder::OpenAiEmbedder(OpenAiEndpointOptions options, transport::HttpClient& client)
    : endpoint_(std::move(options), client, "/embeddings", kMaxAnswerBytes) {}

absl::StatusOr<std::vector<std::vector<float>>> OpenAiEmbedder::Embed(
    const std::vector<std::string>& texts) {
  if (texts.empty()) return std::vector<std::vector<float>>{};
  ASSIGN_OR_RETURN(std::string answer,
                   endpoint_.PostJson(EmbeddingsRequestBody(endpoint_.options().model, texts)));
  absl::StatusOr<std::vector<std::vector<float>>> vectors =
      ParseEmbeddingsAnswer(answer, texts.size());
  if (!vectors.ok()) {
    return absl::InvalidArgumentError(
        base::StrCat(endpoint_.url(), ": ", vectors.status().message()));
  }
  const size_t dim = vectors->front().size();
  size_t known = 0;
  if (!dimension_.compare_exchange_strong(known, dim) && known != dim) {
    return absl::InvalidArgumentError(base::StrCat(
        endpoint_.url(), ": model ", endpoint_.options().model, " answered vectors of ", dim,
        " dimensions where it answered ", known, " before"));
  }
  return vectors;
}

std::string OpenAiEmbedder::model() const { return endpoint_.options().model; }

}  // namespace contextd::endpoints
