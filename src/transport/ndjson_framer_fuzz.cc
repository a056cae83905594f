// libFuzzer target for NdjsonFramer: the input is split into chunks at positions chosen by its
// first byte, and the result must equal feeding it whole (up to oversize sizes); lines never
// exceed the limit and the buffer stays bounded.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "transport/ndjson_framer.h"

namespace {

using contextd::transport::NdjsonFramer;

std::vector<std::string> Run(std::string_view data, size_t chunk, size_t max) {
  std::vector<std::string> out;
  NdjsonFramer f(max);
  auto h = [&](const NdjsonFramer::Event& ev) {
    if (ev.kind == NdjsonFramer::Event::Kind::kLine) {
      if (ev.line.size() > max || ev.line.empty()) std::abort();
      if (ev.line.find('\n') != std::string_view::npos) std::abort();
      out.emplace_back(ev.line);
    } else {
      if (ev.size <= max) std::abort();
      out.emplace_back("\n<too long>");
    }
  };
  for (size_t pos = 0; pos < data.size(); pos += chunk) {
    f.Feed(data.substr(pos, chunk), h);
    if (f.buffered_bytes() > max + 1) std::abort();
  }
  f.Finish(h);
  if (f.buffered_bytes() != 0) std::abort();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 17;
  const size_t max = 1 + data[0] % 64;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (Run(input, chunk, max) != Run(input, input.size() + 1, max)) std::abort();
  return 0;
}
