// Fuzz target for ParseEmbeddingsAnswer: the first byte is the number of texts (0-15), the rest
// the answer's body. It must not crash, and an accepted answer must hold that many vectors of one
// non-zero dimension with finite components.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "endpoints/openai_answers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t expected = data[0] % 16;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto vectors = contextd::endpoints::ParseEmbeddingsAnswer(body, expected);
  if (!vectors.ok()) {
    if (vectors.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (vectors->size() != expected) std::abort();
  for (const auto& v : *vectors) {
    if (v.empty() || v.size() != vectors->front().size()) std::abort();
    for (float x : v) {
      if (!std::isfinite(x)) std::abort();
    }
  }
  return 0;
}
