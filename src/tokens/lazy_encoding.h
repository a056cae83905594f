// LazyEncoding: a TokenCounter for a built-in encoding that loads the vocabulary (GetEncoding) on
// its first count, so a server that has counted nothing yet does not hold ~15 MB of rank tables.
// Thread-safe: concurrent first counts share one load.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tokens/bpe_tokenizer.h"

namespace contextd::tokens {

class LazyEncoding final : public TokenCounter {
 public:
  // InvalidArgument if `name` is not a built-in encoding (checked without loading it).
  static absl::StatusOr<std::unique_ptr<LazyEncoding>> Create(std::string_view name);

  // As BpeTokenizer::Count. The first call loads the vocabulary; the embedded vocabulary failing
  // its SHA-256 check means the binary itself is corrupt, and aborts with a message.
  size_t Count(std::string_view text) const override;
  std::string_view name() const override { return name_; }
  // The loaded tokenizer (loading it if needed).
  const BpeTokenizer& Get() const;

 private:
  explicit LazyEncoding(std::string name) : name_(std::move(name)) {}
  const std::string name_;
  mutable std::atomic<const BpeTokenizer*> loaded_{nullptr};
};

}  // namespace contextd::tokens
