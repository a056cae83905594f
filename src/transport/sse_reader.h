// SseReader: the client side of text/event-stream (the WHATWG "server-sent events" format), the
// one SSE parser of contextd: MCP Streamable HTTP answers and GET streams (UpstreamHttpChannel)
// and the model providers' streamed answers (model/usage_parser). Bytes are fed as they arrive;
// every complete event with data is handed out with its data lines joined by '\n'. Tracks the
// last event id (for Last-Event-ID on reconnect) and the server's `retry:` delay. Bounded: an
// event (or line) larger than `max_event_bytes` is dropped and counted. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace contextd::transport {

class SseReader {
 public:
  explicit SseReader(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

  // Consumes `bytes`; calls `on_event(data)` for each event completed by them (in order).
  void Feed(std::string_view bytes, const std::function<void(std::string data)>& on_event);
  // The response ended normally: an unterminated last line is taken as a line, and a pending
  // event with data is dispatched (a POST answer whose server closed right after its last data
  // line is not lost). Not for a dropped stream, whose last event may be cut off.
  void Finish(const std::function<void(std::string data)>& on_event);

  // The id of the last completed event that carried one ("" if none did).
  const std::string& last_event_id() const { return last_event_id_; }
  // The last `retry:` value (milliseconds), if the server sent one.
  std::optional<int64_t> retry_ms() const { return retry_ms_; }
  // Events dropped for exceeding max_event_bytes.
  int64_t dropped() const { return dropped_; }

 private:
  void Line(std::string_view line, const std::function<void(std::string)>& on_event);
  void DropOverlongLine();

  const size_t max_event_bytes_;
  std::string partial_;  // bytes of a line not yet terminated
  std::string data_;     // data lines of the current event, each followed by '\n'
  bool has_data_ = false;
  bool skipping_ = false;         // the current event overflowed: ignore it up to its blank line
  bool after_cr_ = false;         // the last byte fed was '\r' (a following '\n' belongs to it)
  bool discarding_line_ = false;  // inside an overlong line: its bytes up to its end are dropped
  std::string id_buffer_;         // the id field seen last (applies when its event completes)
  std::string last_event_id_;
  std::optional<int64_t> retry_ms_;
  int64_t dropped_ = 0;
};

}  // namespace contextd::transport
