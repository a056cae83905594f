#include "transport/sse_reader.h"

#include <utility>

namespace contextd::transport {

void SseReader::Feed(std::string_view bytes,
                     const std::function<void(std::string data)>& on_event) {
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (c != '\r' && c != '\n') {
      after_cr_ = false;
      continue;
    }
    // "\r\n" is one line end: the '\n' after a '\r' (possibly in the next chunk) ends nothing.
    bool lf_after_cr = c == '\n' && after_cr_;
    after_cr_ = c == '\r';
    if (lf_after_cr) {
      start = i + 1;
      continue;
    }
    std::string_view piece = bytes.substr(start, i - start);
    start = i + 1;
    if (discarding_line_) {  // the end of an overlong line: not a line of its own
      discarding_line_ = false;
      continue;
    }
    if (partial_.size() + piece.size() > max_event_bytes_) {
      DropOverlongLine();
      discarding_line_ = false;  // it ends here
      continue;
    }
    if (partial_.empty()) {
      Line(piece, on_event);
    } else {
      partial_.append(piece);
      std::string line = std::move(partial_);
      partial_.clear();
      Line(line, on_event);
    }
  }
  if (start < bytes.size() && !discarding_line_) {
    if (partial_.size() + (bytes.size() - start) > max_event_bytes_) {
      DropOverlongLine();  // the rest of the line is discarded as it arrives
    } else {
      partial_.append(bytes.substr(start));
    }
  }
}

void SseReader::DropOverlongLine() {
  // A line longer than any event may be, whether it arrived whole or in pieces: the event it
  // belongs to is dropped (up to its blank line).
  partial_.clear();
  data_.clear();
  has_data_ = false;
  if (!skipping_) ++dropped_;
  skipping_ = true;
  discarding_line_ = true;
}

void SseReader::Finish(const std::function<void(std::string data)>& on_event) {
  discarding_line_ = false;
  if (!partial_.empty()) {
    std::string line = std::move(partial_);
    partial_.clear();
    Line(line, on_event);
  }
  Line("", on_event);
}

void SseReader::Line(std::string_view line, const std::function<void(std::string)>& on_event) {
  if (line.empty()) {
    // The id takes effect when its event completes: an event cut off by a dropped connection
    // is asked for again on reconnect.
    last_event_id_ = id_buffer_;
    bool dispatch = has_data_ && !skipping_;
    skipping_ = false;
    has_data_ = false;
    std::string data = std::move(data_);
    data_.clear();
    if (dispatch) {
      if (!data.empty() && data.back() == '\n') data.pop_back();
      on_event(std::move(data));
    }
    return;
  }
  if (skipping_ || line.front() == ':') return;  // comment (keep-alive)
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_event_bytes_) {
      data_.clear();
      has_data_ = false;
      skipping_ = true;
      ++dropped_;
      return;
    }
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos && value.size() <= 1024) {
      id_buffer_ = std::string(value);
    }
  } else if (field == "retry") {
    if (value.empty() || value.size() > 9) return;
    int64_t ms = 0;
    for (char c : value) {
      if (c < '0' || c > '9') return;
      ms = ms * 10 + (c - '0');
    }
    retry_ms_ = ms;
  }
  // "event" and unknown fields: MCP sends only "message" events, and the model APIs repeat the
  // event's type inside its data.
}

}  // namespace contextd::transport
