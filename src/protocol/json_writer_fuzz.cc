// libFuzzer target for AppendCompactJson: its output must be nlohmann's compact dump, byte for
// byte. The input is parsed as JSON when it is JSON; in any case its raw bytes (valid UTF-8 or
// not) are also written as a string, an object key and an array element.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/json_writer.h"

namespace {

using contextd::protocol::Json;

void Check(const Json& v) {
  std::string ours;
  contextd::protocol::AppendCompactJson(ours, v);
  if (ours != v.dump(-1, ' ', false, Json::error_handler_t::replace)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string raw(reinterpret_cast<const char*>(data), size);
  // Within the nesting contextd accepts (ParseIncoming refuses deeper input): writing and
  // freeing a value recurse, in nlohmann as here.
  const auto brackets =
      std::count(raw.begin(), raw.end(), '[') + std::count(raw.begin(), raw.end(), '{');
  if (brackets <= contextd::protocol::kMaxJsonDepth) {
    Json parsed = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) Check(parsed);
  }
  Check(Json(raw));
  Check(Json::object({{raw, raw}}));
  Check(Json::array({raw, 1, nullptr}));
  return 0;
}
