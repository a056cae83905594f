// HttpUrl: an http or https URL split into what a client connects to and what it requests.
// Shared by the upstream MCP client and HttpClient. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace contextd::transport {

// "http[s]://host[:port]/path" -> {tls, host, port, target}.
struct HttpUrl {
  bool tls = false;
  std::string host;    // without the brackets of an IPv6 literal
  std::string port;    // "443" / "80" when the URL names none
  std::string target;  // the path and query, "/" when the URL has none
};

// Splits `url`; InvalidArgument for anything but an http:// or https:// URL with a host.
absl::StatusOr<HttpUrl> ParseHttpUrl(std::string_view url);

}  // namespace contextd::transport
