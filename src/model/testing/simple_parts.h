// Stand-ins for the context manager's parts in the model room's tests: a token counter that
// counts bytes / 4 (enough to see counts move) and a scrubber that redacts one word (the gateway
// uses the real counter and rule scrubber). For tests only; stateless.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "scrub/scrubber.h"
#include "tokens/token_counter.h"

namespace contextd::model::testing {

class ByteCounter : public tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override { return (text.size() + 3) / 4; }
  std::string_view name() const override { return "bytes/4"; }
};

// Redacts `word` and the digits right after it ("SECRET42" -> "[REDACTED]").
class WordScrubber : public scrub::Scrubber {
 public:
  explicit WordScrubber(std::string word = "SECRET") : word_(std::move(word)) {}
  std::string Scrub(std::string_view text) const override {
    constexpr std::string_view kRedacted = "[REDACTED]";
    std::string out(text);
    for (size_t at = 0; (at = out.find(word_, at)) != std::string::npos; at += kRedacted.size()) {
      size_t end = at + word_.size();
      while (end < out.size() && isdigit(static_cast<unsigned char>(out[end]))) ++end;
      out.replace(at, end - at, kRedacted);
    }
    return out;
  }

 private:
  std::string word_;
};

}  // namespace contextd::model::testing
