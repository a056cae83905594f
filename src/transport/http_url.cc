#include "transport/http_url.h"

#include "base/str_cat.h"

namespace contextd::transport {

absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl out;
  if (url.substr(0, 8) == "https://") {
    out.tls = true;
    url.remove_prefix(8);
  } else if (url.substr(0, 7) == "http://") {
    url.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError(
        base::StrCat("url must start with http:// or https://: ", url));
  }
  const char* default_port = out.tls ? "443" : "80";
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (authority.empty()) return absl::InvalidArgumentError("url lacks a host");
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError("bad IPv6 host");
    out.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    out.port = authority.size() > 1 && authority.front() == ':' ? std::string(authority.substr(1))
                                                                : default_port;
  } else {
    size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    out.port =
        colon == std::string_view::npos ? default_port : std::string(authority.substr(colon + 1));
  }
  if (out.host.empty() || out.port.empty()) {
    return absl::InvalidArgumentError(base::StrCat("bad url: ", url));
  }
  return out;
}

}  // namespace contextd::transport
