// The client side of TLS shared by the upstream MCP client and HttpClient: a client context that
// verifies peers against the system trust store or a CA file (TLS 1.2 or newer), the expected
// peer name of one connection (SNI and host name or IP check), and a readable reason when a
// handshake fails. Functions are thread-safe on distinct objects; a configured context may be
// shared by connections on many threads.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <string>

#include "absl/status/status.h"

namespace contextd::transport::internal {

// Makes `context` verify peers against `ca_file` (PEM), or the system trust store when it is
// empty, and refuse protocols older than TLS 1.2. InvalidArgument when the trust store cannot be
// loaded ("cannot load CA file /x: ...").
absl::Status ConfigureTlsClientContext(boost::asio::ssl::context& context,
                                       const std::string& ca_file);

// Sets what the handshake of `ssl` checks: the certificate must name `host` (a DNS name, no
// partial wildcards, sent as SNI; or an IP literal, matched against IP subjectAltNames and not
// sent as SNI). Unavailable when OpenSSL refuses the name.
absl::Status SetTlsPeerName(SSL* ssl, const std::string& host);

// The Unavailable status of a failed handshake with host:port: "TLS handshake with h:p failed:
// certificate verify failed: <OpenSSL's reason>", or the handshake error's message.
absl::Status TlsHandshakeError(SSL* ssl, const boost::system::error_code& ec,
                               const std::string& host, const std::string& port);

}  // namespace contextd::transport::internal
