#include "model/transcript.h"

#include <openssl/evp.h>

#include <memory>

namespace contextd::model {

std::string Digest(std::initializer_list<std::string_view> parts) {
  // EVP with the built-in SHA-256 cannot fail short of memory exhaustion. The algorithm is
  // fetched once and the context reused per thread: both cost more than hashing a short block.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                           EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), sha256, nullptr);
  for (std::string_view part : parts) {
    // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
    uint64_t size = part.size();
    EVP_DigestUpdate(ctx.get(), &size, sizeof(size));
    EVP_DigestUpdate(ctx.get(), part.data(), part.size());
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), 16);
}

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(kHex[u >> 4]);
    out.push_back(kHex[u & 0xF]);
  }
  return out;
}

}  // namespace contextd::model
