// Optional semantic ranking for the ReasoningBank: an Embedder turns texts into vectors (an
// OpenAI-compatible /v1/embeddings endpoint implements it in server/), and a VectorIndex answers
// nearest-neighbour queries over the items' vectors (HNSW in memory/hnsw_index.h). Both are
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::memory {

class Embedder {
 public:
  virtual ~Embedder() = default;
  // One vector per text, in order, all of dimension dimension() once known. Unavailable or
  // DeadlineExceeded when the endpoint is unreachable or slow; InvalidArgument for an answer
  // that is not a list of equal-length vectors.
  virtual absl::StatusOr<std::vector<std::vector<float>>> Embed(
      const std::vector<std::string>& texts) = 0;
  // The model name vectors are stored under (vectors of another model are not compared).
  virtual std::string model() const = 0;
};

// One nearest-neighbour hit: the item id and its cosine distance (0 = same direction).
struct Neighbour {
  std::string id;
  float distance = 0;
};

class VectorIndex {
 public:
  virtual ~VectorIndex() = default;
  // Adds (or replaces) the vector of `id`. InvalidArgument if its dimension differs from the
  // index's (set by the first vector).
  virtual absl::Status Add(std::string_view id, const std::vector<float>& vector) = 0;
  // Up to `k` nearest ids to `query`, nearest first. Empty when the index is empty.
  virtual absl::StatusOr<std::vector<Neighbour>> Nearest(const std::vector<float>& query,
                                                         int k) const = 0;
  virtual size_t size() const = 0;
  // Bytes the index holds in memory (for the footprint metric).
  virtual size_t memory_bytes() const = 0;
};

}  // namespace contextd::memory
