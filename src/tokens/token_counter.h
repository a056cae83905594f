// TokenCounter: the interface every count in the server goes through. Implementations are
// immutable after construction and thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace contextd::tokens {

class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  // Number of tokens `text` encodes to (special-token text counted as plain text). Never fails:
  // bytes that are not valid UTF-8 are counted as U+FFFD.
  virtual size_t Count(std::string_view text) const = 0;
  // The encoding's name, e.g. "o200k_base".
  virtual std::string_view name() const = 0;
};

}  // namespace contextd::tokens
