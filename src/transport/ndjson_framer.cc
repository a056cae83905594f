#include "transport/ndjson_framer.h"

namespace contextd::transport {
namespace {

bool IsBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

void NdjsonFramer::EmitLine(std::string_view line, Handler handler) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Event ev;
  if (line.size() > max_line_bytes_) {
    ev.kind = Event::Kind::kTooLong;
    ev.size = line.size();
    handler(ev);
    return;
  }
  if (IsBlank(line)) return;
  ev.line = line;
  handler(ev);
}

void NdjsonFramer::Feed(std::string_view data, Handler handler) {
  // A line may hold max_line_bytes_ of content plus a '\r' before its '\n'.
  const size_t bound = max_line_bytes_ + 1;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (discarding_) return;
      std::string_view rest = data.substr(pos);
      if (partial_.size() + rest.size() > bound) {
        Event ev;
        ev.kind = Event::Kind::kTooLong;
        ev.size = partial_.size() + rest.size();
        partial_.clear();
        discarding_ = true;
        handler(ev);
        return;
      }
      partial_.append(rest);
      return;
    }
    std::string_view segment = data.substr(pos, nl - pos);
    pos = nl + 1;
    if (discarding_) {
      // The newline that ends an oversize line: resume normal framing after it.
      discarding_ = false;
      continue;
    }
    if (partial_.empty()) {
      EmitLine(segment, handler);  // zero-copy: the whole line is in this chunk
      continue;
    }
    if (partial_.size() + segment.size() > bound) {
      Event ev;
      ev.kind = Event::Kind::kTooLong;
      ev.size = partial_.size() + segment.size();
      partial_.clear();
      handler(ev);
      continue;
    }
    partial_.append(segment);
    EmitLine(partial_, handler);
    partial_.clear();
  }
}

void NdjsonFramer::Finish(Handler handler) {
  if (discarding_) {
    discarding_ = false;
    return;
  }
  if (!partial_.empty()) {
    std::string last;
    last.swap(partial_);
    EmitLine(last, handler);
  }
}

}  // namespace contextd::transport
