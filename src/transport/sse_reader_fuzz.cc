// libFuzzer target for SseReader: the input is fed in chunks whose size comes from its first
// byte, and the events must equal feeding it whole; no event exceeds the limit or holds "\r".
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "transport/sse_reader.h"

namespace {

using contextd::transport::SseReader;

std::vector<std::string> Run(std::string_view data, size_t chunk, size_t max, std::string* id,
                             int64_t* dropped) {
  std::vector<std::string> out;
  SseReader reader(max);
  auto on_event = [&](std::string event) {
    if (event.size() > max) std::abort();
    out.push_back(std::move(event));
  };
  for (size_t pos = 0; pos < data.size(); pos += chunk)
    reader.Feed(data.substr(pos, chunk), on_event);
  reader.Finish(on_event);
  *id = reader.last_event_id();
  *dropped = reader.dropped();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  size_t chunk = 1 + bytes[0] % 17;
  constexpr size_t kMax = 64;
  std::string whole_id, chunked_id;
  int64_t whole_dropped = 0, chunked_dropped = 0;
  std::vector<std::string> whole = Run(data, data.size() + 1, kMax, &whole_id, &whole_dropped);
  std::vector<std::string> chunked = Run(data, chunk, kMax, &chunked_id, &chunked_dropped);
  // How the bytes are cut into chunks never matters, overlong lines and events included.
  if (whole != chunked || whole_id != chunked_id || whole_dropped != chunked_dropped) {
    std::abort();
  }
  for (const auto& e : whole) {
    if (e.find('\r') != std::string::npos) std::abort();
  }
  return 0;
}
