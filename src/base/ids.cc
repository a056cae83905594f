#include "base/ids.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace contextd::base {

void RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      std::perror("getrandom");
      std::abort();  // No safe fallback for session ids.
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
}

std::string HexEncode(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (unsigned char c : data) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string TimeOrderedId(std::string_view prefix) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  char raw[16];
  const uint64_t t = static_cast<uint64_t>(ms);
  for (int i = 0; i < 6; ++i) raw[i] = static_cast<char>((t >> (8 * (5 - i))) & 0xff);
  RandomBytes(raw + 6, 10);
  std::string out(prefix);
  out += HexEncode(std::string_view(raw, sizeof(raw)));
  return out;
}

std::string RandomId(std::string_view prefix, size_t bytes) {
  std::string raw(bytes, '\0');
  RandomBytes(raw.data(), raw.size());
  std::string out(prefix);
  out += HexEncode(raw);
  return out;
}

}  // namespace contextd::base
