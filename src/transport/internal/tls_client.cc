#include "transport/internal/tls_client.h"

#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

#include "base/str_cat.h"

namespace contextd::transport::internal {

namespace ssl = boost::asio::ssl;

absl::Status ConfigureTlsClientContext(ssl::context& context, const std::string& ca_file) {
  boost::system::error_code ec;
  context.set_verify_mode(ssl::verify_peer, ec);
  if (!ec) {
    if (ca_file.empty()) {
      context.set_default_verify_paths(ec);
    } else {
      context.load_verify_file(ca_file, ec);
    }
  }
  if (ec) {
    return absl::InvalidArgumentError(base::StrCat(
        "cannot load ",
        ca_file.empty() ? std::string("the system trust store") : base::StrCat("CA file ", ca_file),
        ": ", ec.message()));
  }
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  return absl::OkStatus();
}

absl::Status SetTlsPeerName(SSL* ssl, const std::string& host) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  bool name_set;
  if (!not_ip) {
    name_set = X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  } else {
    // SNI only for names (RFC 6066 forbids IP literals).
    name_set = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
               X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0) == 1;
  }
  if (!name_set) {
    return absl::UnavailableError(
        base::StrCat("TLS setup for ", host, " failed: cannot set the expected host name"));
  }
  return absl::OkStatus();
}

absl::Status TlsHandshakeError(SSL* ssl, const boost::system::error_code& ec,
                               const std::string& host, const std::string& port) {
  long verify = SSL_get_verify_result(ssl);
  std::string why = verify != X509_V_OK ? base::StrCat("certificate verify failed: ",
                                                       X509_verify_cert_error_string(verify))
                                        : ec.message();
  return absl::UnavailableError(
      base::StrCat("TLS handshake with ", host, ":", port, " failed: ", why));
}

}  // namespace contextd::transport::internal
