// UsageParser: reads the provider's token usage out of a Messages answer while it is relayed,
// without holding it: a JSON body (kept up to a limit) or an SSE stream (message_start carries the
// input side, message_delta the cumulative output). Bytes are fed as they arrive, split anywhere.
// Not thread-safe; one per answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace contextd::model {

struct ProviderUsage {
  int64_t input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t output_tokens = 0;
  bool seen = false;  // a usage object was found
};

class UsageParser {
 public:
  // `event_stream`: the answer is text/event-stream (else a JSON body).
  explicit UsageParser(bool event_stream) : event_stream_(event_stream) {}

  void Feed(std::string_view bytes);
  // Call at the end of the answer (parses a JSON body).
  void Finish();
  const ProviderUsage& usage() const { return usage_; }

 private:
  void Line(std::string_view line);
  void Json(std::string_view text);

  static constexpr size_t kMaxKept = 4u << 20;  // a longer line or body is not parsed
  const bool event_stream_;
  std::string pending_;
  bool overflow_ = false;
  ProviderUsage usage_;
};

}  // namespace contextd::model
