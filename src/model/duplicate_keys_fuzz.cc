// Fuzz target for the duplicate-key detectors (decision 0029): the span parser's own walk
// (ParseRawJson) and the separate scan (base::FindDuplicateJsonKey) must both agree with a
// reference, nlohmann's parser with a callback collecting the names of each object, on every
// input nlohmann accepts; and report the same path. Aborts on a disagreement.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_keys.h"
#include "model/raw_json.h"
#include "nlohmann/json.hpp"

namespace {

// nlohmann's verdict: nullopt when it refuses the input, else whether some object repeats a name.
std::optional<bool> ReferenceHasDuplicate(std::string_view input) {
  // nlohmann stops reading at a NUL byte ("2\0{...}" is 2): no reference for what follows.
  if (input.find('\0') != std::string_view::npos) return std::nullopt;
  std::vector<std::set<std::string>> open;
  bool duplicate = false;
  auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open.emplace_back();
    } else if (event == Event::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == Event::key && !open.empty()) {
      if (!open.back().insert(parsed.get<std::string>()).second) duplicate = true;
    }
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(input.begin(), input.end(), callback, false);
  if (j.is_discarded()) return std::nullopt;
  return duplicate;
}

bool IsDuplicateError(std::string_view message) {
  return message.find(": duplicate key \"") != std::string_view::npos &&
         !message.starts_with("invalid JSON at byte");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64 << 10)) return 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto scanned = contextd::base::FindDuplicateJsonKey(input);  // any bytes: must not crash
  auto raw = contextd::model::ParseRawJson(input, 2);
  std::optional<bool> reference = ReferenceHasDuplicate(input);
  if (!reference) return 0;
  if (scanned.has_value() != *reference) std::abort();
  if (scanned && !scanned->valid_name) std::abort();  // nlohmann refuses such names
  if (raw.ok()) {
    if (*reference) std::abort();
  } else if (const std::string message(raw.status().message()); IsDuplicateError(message)) {
    if (!*reference) std::abort();
    if (message != scanned->Describe()) std::abort();
  } else if (*reference) {
    // Refused for another reason nlohmann does not share (a byte order mark, depth past 256):
    // fine, as long as it is refused.
  }
  return 0;
}
