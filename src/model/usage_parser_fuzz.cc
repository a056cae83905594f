// Fuzz target for UsageParser: any bytes, split at a point the input chooses, as an event stream
// and as a JSON body, read by every API's usage reader (model_api.h); it must not crash, and
// splitting must not change what it reads.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/model_api.h"
#include "model/usage_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t cut = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
  for (size_t mode = 0; mode < 2 * contextd::model::ModelApis().size(); ++mode) {
    const bool stream = mode & 1;
    // Every API's usage reader, from the gateway's table.
    const contextd::model::UsageFields& format = contextd::model::ModelApis()[mode / 2].usage;
    contextd::model::UsageParser whole(stream, format);
    whole.Feed(bytes);
    whole.Finish();
    contextd::model::UsageParser split(stream, format);
    split.Feed(bytes.substr(0, cut));
    split.Feed(bytes.substr(cut));
    split.Finish();
    const auto& a = whole.usage();
    const auto& b = split.usage();
    if (a.seen != b.seen || a.input_tokens != b.input_tokens ||
        a.output_tokens != b.output_tokens ||
        a.cache_read_input_tokens != b.cache_read_input_tokens ||
        a.cache_creation_input_tokens != b.cache_creation_input_tokens ||
        (!format.cached_details.empty() && (a.input_tokens < 0 || a.cache_read_input_tokens < 0))) {
      std::abort();
    }
  }
  return 0;
}
