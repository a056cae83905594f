// Stand-ins for the context manager's parts in the model room's tests: a token counter that
// counts bytes / 4 (enough to see counts move) and a scrubber that redacts the word "SECRET"
// (the gateway uses the real counter and rule scrubber). For tests only; stateless.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::model::testing {

class ByteCounter : public tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override { return (text.size() + 3) / 4; }
  std::string_view name() const override { return "bytes/4"; }
};

class SecretScrubber : public scrub::Scrubber {
 public:
  std::string Scrub(std::string_view text) const override {
    std::string out(text);
    for (size_t at = 0; (at = out.find("SECRET", at)) != std::string::npos;) {
      out.replace(at, 6, "[REDACTED]");
    }
    return out;
  }
};

}  // namespace contextd::model::testing
