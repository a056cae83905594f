// Small helpers shared by the HTTP listener and the MCP endpoint: case folding, Host/Origin
// allowlist rules, status texts, JSON-RPC error bodies and chunked framing. Stateless and
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace contextd::transport::internal {

// ASCII lower case of `s`.
std::string Lower(std::string_view s);

// Whether `hay` contains the lowercase `needle`, ignoring the case of `hay`.
bool ContainsNoCase(std::string_view hay, std::string_view needle);

// One allowlist entry: optional scheme, host, optional port.
struct HostRule {
  std::string scheme;  // origins only; "" = http or https
  std::string host;
  std::string port;  // "" = any
};

// The allowlists HttpServerOptions::allowed_{hosts,origins} compile to: loopback by default, any
// with a single "*".
class HostPolicy {
 public:
  HostPolicy(const std::vector<std::string>& allowed_hosts,
             const std::vector<std::string>& allowed_origins);
  // Whether a Host header value is allowed (an absent one is: browsers always send Host).
  bool HostAllowed(std::string_view host_header) const;
  // Whether an Origin header value is allowed ("null" and values without a scheme are not).
  bool OriginAllowed(std::string_view origin) const;

 private:
  std::vector<HostRule> hosts_;
  std::vector<HostRule> origins_;
  bool any_host_ = false;
  bool any_origin_ = false;
};

// The reason phrase of an HTTP status code.
const char* StatusText(int code);

// The JSON-RPC error body used for HTTP-level failures (as the reference SDK does).
std::string ErrorBody(int code, std::string_view message);

// The request target of the request line at the start of `raw` ("POST /v1/messages HTTP/1.1"
// gives "/v1/messages"), looked at within its first 8 KiB; empty when there is no such line. For
// refusals made before the parser has read the request line (a header block over the limit).
std::string_view RequestLineTarget(std::string_view raw);

// `data` framed as one HTTP/1.1 chunk.
std::string ChunkOf(std::string_view data);

}  // namespace contextd::transport::internal
