// Scrubber: the interface every path into storage, logs or a reply goes through to remove
// secrets. Implementations are immutable after construction and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace contextd::scrub {

class Scrubber {
 public:
  virtual ~Scrubber() = default;
  // Returns `text` with every secret found replaced by `[REDACTED:<rule-id>:<preview>]`.
  // Idempotent: Scrub(Scrub(x)) == Scrub(x). Never fails.
  virtual std::string Scrub(std::string_view text) const = 0;
};

}  // namespace contextd::scrub
