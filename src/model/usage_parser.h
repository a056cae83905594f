// UsageParser: reads the provider's token usage out of an answer while it is relayed, without
// holding it: a JSON body (kept up to a limit) or an SSE stream. Messages: message_start carries
// the input side, message_delta the cumulative output. Chat Completions: the body's `usage`, or in
// a stream the chunk that carries one (the last, when the client asked
// `stream_options.include_usage`). Responses: the body's `usage`, or in a stream the
// `response.completed` (or `.incomplete`, `.failed`) event's `response.usage`. Bytes are fed as
// they arrive, split anywhere; a stream is read with transport::SseReader, one event's data at a
// time.
// Not thread-safe; one per answer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "transport/sse_reader.h"

namespace contextd::model {

// Counted the Messages way, whatever the API: `input_tokens` is the input not read from the cache.
// From Chat Completions: input_tokens = prompt_tokens - prompt_tokens_details.cached_tokens,
// cache_read_input_tokens = cached_tokens, output_tokens = completion_tokens (no cache writes).
// From Responses: input_tokens - input_tokens_details.cached_tokens, cached_tokens and
// output_tokens likewise.
struct ProviderUsage {
  int64_t input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t output_tokens = 0;
  bool seen = false;  // a usage object was found
};

// Where one API's answers hold their usage object and what its counts are called: the usage
// reader of the API's row (model/model_api.h).
struct UsageFields {
  // The member holding `usage` when an event or body has none at its top ("message": Messages'
  // message_start; "response": the Responses events); empty when `usage` is only at the top.
  std::string_view holder;
  std::string_view input;   // "input_tokens", "prompt_tokens"
  std::string_view output;  // "output_tokens", "completion_tokens"
  // The object inside `usage` whose `cached_tokens` counts the input read from the cache, which
  // `input` then includes ("prompt_tokens_details"). Empty for the Messages way: input excludes
  // the cache, counted apart as cache_read_input_tokens and cache_creation_input_tokens.
  std::string_view cached_details;
};

class UsageParser {
 public:
  // `event_stream`: the answer is text/event-stream (else a JSON body). `fields`: the API's.
  UsageParser(bool event_stream, const UsageFields& fields);
  UsageParser(const UsageParser&) = delete;
  UsageParser& operator=(const UsageParser&) = delete;

  void Feed(std::string_view bytes);
  // Call at the end of the answer: parses a JSON body, or a stream's last event when no blank line
  // ended it.
  void Finish();
  const ProviderUsage& usage() const { return usage_; }

 private:
  void Event(std::string_view data);
  void Json(std::string_view text);

  static constexpr size_t kMaxKept = 4u << 20;  // a longer event or body is not parsed
  const bool event_stream_;
  const UsageFields fields_;
  transport::SseReader events_{kMaxKept};
  const std::function<void(std::string data)> on_event_;
  std::string pending_;  // a JSON body
  bool overflow_ = false;
  ProviderUsage usage_;
};

}  // namespace contextd::model
