#include "trail/content_hash.h"

#include <openssl/evp.h>

#include "base/ids.h"

namespace contextd::trail {

std::string ContentHash(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest with the built-in SHA-256 cannot fail short of memory exhaustion.
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return base::HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

}  // namespace contextd::trail
