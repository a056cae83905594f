// NdjsonFramer: splits a byte stream into newline-delimited lines (NDJSON), tolerating "\r\n",
// partial reads and lines longer than a limit (reported once, then skipped to the next newline
// without buffering them). Not thread-safe: one framer per stream, fed from one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"

namespace contextd::transport {

class NdjsonFramer {
 public:
  // What Feed()/Finish() report.
  struct Event {
    enum class Kind { kLine, kTooLong };
    Kind kind = Kind::kLine;
    // kLine: the line without its terminator ("\n" or "\r\n"); valid only during the callback.
    std::string_view line;
    // kTooLong: how many bytes of the line had arrived when it crossed the limit (> max).
    size_t size = 0;
  };
  using Handler = absl::FunctionRef<void(const Event&)>;

  // `max_line_bytes` bounds one line (terminator excluded); longer lines yield one kTooLong.
  explicit NdjsonFramer(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Consumes `data`, calling `handler` for each complete line and each oversize line, in order.
  // Lines that are empty or only whitespace are skipped. Buffers at most max_line_bytes of an
  // incomplete line between calls.
  void Feed(std::string_view data, Handler handler);

  // End of stream: reports a final line that lacked its newline (if any). The framer is then
  // empty and may be reused.
  void Finish(Handler handler);

  // Bytes of an incomplete line currently held.
  size_t buffered_bytes() const { return partial_.size(); }

 private:
  void EmitLine(std::string_view line, Handler handler);

  const size_t max_line_bytes_;
  std::string partial_;      // the start of a line whose newline has not arrived yet
  bool discarding_ = false;  // inside an oversize line: drop bytes until the next newline
};

}  // namespace contextd::transport
