#include "store/usage_folds.h"

#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "nlohmann/json.hpp"

namespace contextd::store {

std::string EncodeFoldsSkipped(const std::map<std::string, int>& skipped) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [reason, n] : skipped) {
    if (n > 0) j[reason] = n;
  }
  return j.empty() ? std::string() : base::DumpJson(j);
}

absl::StatusOr<std::map<std::string, int64_t>> DecodeFoldsSkipped(std::string_view text) {
  std::map<std::string, int64_t> out;
  if (text.empty()) return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("folds_skipped: not a JSON object");
  }
  for (const auto& [reason, n] : j.items()) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("folds_skipped: the count of '", reason, "' is not a non-negative integer"));
    }
    out[reason] = n.get<int64_t>();
  }
  return out;
}

void MergeFoldsSkipped(std::string_view joined, std::map<std::string, int64_t>& into) {
  while (!joined.empty()) {
    const size_t nl = joined.find('\n');
    auto one = DecodeFoldsSkipped(joined.substr(0, nl));
    if (one.ok()) {
      for (const auto& [reason, n] : *one) into[reason] += n;
    }
    if (nl == std::string_view::npos) break;
    joined.remove_prefix(nl + 1);
  }
}

}  // namespace contextd::store
