#include "events/publisher.h"

namespace contextd::events {

std::string RedactNatsUrl(std::string_view url) {
  std::string out;
  size_t start = 0;
  while (start <= url.size()) {
    size_t comma = url.find(',', start);
    std::string_view one =
        url.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t scheme = one.find("://");
    size_t host = scheme == std::string_view::npos ? 0 : scheme + 3;
    size_t at = one.rfind('@');
    if (!out.empty() || start > 0) out.push_back(',');
    if (at != std::string_view::npos && at >= host) {
      out.append(one.substr(0, host)).append("***").append(one.substr(at));
    } else {
      out.append(one);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

const char* ConnectionStateName(ConnectionState state) {
  switch (state) {
    case ConnectionState::kConnecting:
      return "connecting";
    case ConnectionState::kConnected:
      return "connected";
    case ConnectionState::kReconnecting:
      return "reconnecting";
    case ConnectionState::kClosed:
      return "closed";
  }
  return "unknown";
}

}  // namespace contextd::events
