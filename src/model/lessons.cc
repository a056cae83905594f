#include "model/lessons.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "model/raw_json.h"
#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

constexpr std::string_view kReminderOpen = "<system-reminder>";
constexpr std::string_view kReminderClose = "</system-reminder>";

// `text` without its <system-reminder>...</system-reminder> spans (an unclosed one runs to the
// end: it is the client's, not the person's).
std::string WithoutReminders(std::string_view text) {
  std::string out;
  for (;;) {
    size_t open = text.find(kReminderOpen);
    out.append(text.substr(0, open));
    if (open == std::string_view::npos) break;
    size_t close = text.find(kReminderClose, open + kReminderOpen.size());
    if (close == std::string_view::npos) break;
    text.remove_prefix(close + kReminderClose.size());
  }
  return out;
}

}  // namespace

std::string LessonRecord::Serialize() const {
  nlohmann::ordered_json j;
  j["block"] = block;
  j["ids"] = ids;
  j["tokens"] = tokens;
  return base::DumpJson(j);
}

absl::StatusOr<LessonRecord> LessonRecord::Parse(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto malformed = [] { return absl::InternalError("a stored lesson record is malformed"); };
  if (!j.is_object()) return malformed();
  auto block = j.find("block");
  auto ids = j.find("ids");
  auto tokens = j.find("tokens");
  if (block == j.end() || !block->is_string() || ids == j.end() || !ids->is_array() ||
      tokens == j.end() || !tokens->is_number_integer()) {
    return malformed();
  }
  LessonRecord r;
  r.block = block->get<std::string>();
  for (const nlohmann::json& id : *ids) {
    if (!id.is_string()) return malformed();
    r.ids.push_back(id.get<std::string>());
  }
  r.tokens = tokens->get<int64_t>();
  // The block goes to the provider as it is: it must be one JSON object.
  auto node = ParseRawJson(r.block, 4);
  if (!node.ok() || node->type != JsonType::kObject) return malformed();
  return r;
}

std::string TaskText(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& text : texts) {
    // Until none is left: removing one span can join the pieces of another.
    std::string kept = WithoutReminders(text);
    for (std::string again = WithoutReminders(kept); again != kept;
         again = WithoutReminders(kept)) {
      kept = std::move(again);
    }
    absl::StripAsciiWhitespace(&kept);
    if (kept.empty()) continue;
    if (!out.empty()) out.push_back('\n');
    out += kept;
  }
  return out;
}

std::string LessonBlock(std::string_view text) {
  return absl::StrCat("{\"type\":\"text\",\"text\":", QuoteJsonString(text), "}");
}

}  // namespace contextd::model
