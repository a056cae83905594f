#include "transport/internal/http_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "protocol/jsonrpc.h"

namespace contextd::transport::internal {
namespace {

// Splits "host[:port]" / "[v6]:port" into lowercase host and port ("" when absent).
void SplitHostPort(std::string_view hp, std::string* host, std::string* port) {
  host->clear();
  port->clear();
  if (!hp.empty() && hp.front() == '[') {
    size_t close = hp.find(']');
    if (close == std::string_view::npos) {
      *host = Lower(hp);
      return;
    }
    *host = Lower(hp.substr(0, close + 1));
    if (close + 1 < hp.size() && hp[close + 1] == ':') *port = std::string(hp.substr(close + 2));
    return;
  }
  size_t colon = hp.rfind(':');
  if (colon != std::string_view::npos && hp.find(':') == colon) {
    *host = Lower(hp.substr(0, colon));
    *port = std::string(hp.substr(colon + 1));
  } else {
    *host = Lower(hp);
  }
}

std::vector<HostRule> LoopbackRules() {
  return {{"", "localhost", ""}, {"", "127.0.0.1", ""}, {"", "[::1]", ""}};
}

// Parses "scheme://host[:port]" (origins) or "host[:port]" (hosts).
HostRule ParseRule(std::string_view text, bool with_scheme) {
  HostRule r;
  if (with_scheme) {
    size_t sep = text.find("://");
    if (sep != std::string_view::npos) {
      r.scheme = Lower(text.substr(0, sep));
      text.remove_prefix(sep + 3);
    }
    while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  }
  SplitHostPort(text, &r.host, &r.port);
  return r;
}

bool Matches(const std::vector<HostRule>& rules, const std::string& scheme, const std::string& host,
             const std::string& port) {
  for (const auto& r : rules) {
    if (r.host != host) continue;
    if (!r.port.empty() && r.port != port) continue;
    if (r.scheme.empty()) {
      if (!scheme.empty() && scheme != "http" && scheme != "https") continue;
    } else if (r.scheme != scheme) {
      continue;
    }
    return true;
  }
  return false;
}

}  // namespace

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  return Lower(hay).find(needle) != std::string::npos;
}

HostPolicy::HostPolicy(const std::vector<std::string>& allowed_hosts,
                       const std::vector<std::string>& allowed_origins) {
  if (allowed_hosts.empty()) {
    hosts_ = LoopbackRules();
  } else if (allowed_hosts.size() == 1 && allowed_hosts[0] == "*") {
    any_host_ = true;
  } else {
    for (const auto& h : allowed_hosts) hosts_.push_back(ParseRule(h, false));
  }
  if (allowed_origins.empty()) {
    origins_ = LoopbackRules();
  } else if (allowed_origins.size() == 1 && allowed_origins[0] == "*") {
    any_origin_ = true;
  } else {
    for (const auto& o : allowed_origins) origins_.push_back(ParseRule(o, true));
  }
}

bool HostPolicy::HostAllowed(std::string_view host_header) const {
  if (any_host_ || host_header.empty()) return true;
  std::string host, port;
  SplitHostPort(host_header, &host, &port);
  return Matches(hosts_, "", host, port);
}

bool HostPolicy::OriginAllowed(std::string_view origin) const {
  if (any_origin_) return true;
  size_t sep = origin.find("://");
  if (sep == std::string_view::npos) return false;  // includes "null"
  std::string scheme = Lower(origin.substr(0, sep));
  std::string_view rest = origin.substr(sep + 3);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string host, port;
  SplitHostPort(rest, &host, &port);
  return Matches(origins_, scheme, host, port);
}

const char* StatusText(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 529:
      return "Overloaded";  // Anthropic's (non-standard) overloaded status
    default:
      return "Unknown";
  }
}

std::string ErrorBody(int code, std::string_view message) {
  return protocol::Serialize(protocol::MakeError(nullptr, code, message));
}

std::string_view RequestLineTarget(std::string_view raw) {
  constexpr size_t kMaxLine = 8u << 10;
  raw = raw.substr(0, std::min(raw.size(), kMaxLine));
  raw = raw.substr(0, raw.find_first_of("\r\n"));
  const size_t method_end = raw.find(' ');
  if (method_end == std::string_view::npos || method_end == 0) return {};
  std::string_view rest = raw.substr(method_end + 1);
  const size_t target_end = rest.find(' ');
  if (target_end == std::string_view::npos) return {};  // no version: not a request line
  std::string_view target = rest.substr(0, target_end);
  if (target.empty() || target.front() != '/') return {};
  return target;
}

std::string ChunkOf(std::string_view data) {
  char hex[20];
  auto [end, ec] = std::to_chars(hex, hex + sizeof(hex), data.size(), 16);
  (void)ec;
  std::string out;
  out.reserve(data.size() + 16);
  out.append(hex, end);
  out.append("\r\n");
  out.append(data);
  out.append("\r\n");
  return out;
}

}  // namespace contextd::transport::internal
