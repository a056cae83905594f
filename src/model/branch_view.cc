#include "model/branch_view.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "nlohmann/json.hpp"

namespace contextd::model {

const char* BranchViewName(BranchView view) {
  return view == BranchView::kIsolated ? "isolated" : "inherited";
}

absl::StatusOr<BranchView> ParseBranchView(std::string_view text) {
  if (text == "isolated") return BranchView::kIsolated;
  if (text == "inherited") return BranchView::kInherited;
  return absl::InvalidArgumentError(
      absl::StrCat("must be \"isolated\" or \"inherited\", got \"", std::string(text), "\""));
}

std::string ViewRecord::Serialize() const {
  nlohmann::ordered_json j;
  j["branch_id"] = branch_id;
  j["view"] = BranchViewName(view);
  j["keep_opening"] = keep_opening;
  j["opening"] = opening;
  j["opening_digest"] = opening_digest;
  return base::DumpJson(j);
}

absl::StatusOr<ViewRecord> ViewRecord::Parse(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto str = [&](const char* key) -> const std::string* {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const absl::Status malformed = absl::InternalError("a stored branch view record is malformed");
  if (!j.is_object() || !str("branch_id") || !str("view") || !str("opening") ||
      !str("opening_digest") || !j.contains("keep_opening") || !j["keep_opening"].is_boolean()) {
    return malformed;
  }
  auto view = ParseBranchView(*str("view"));
  if (!view.ok()) return malformed;
  ViewRecord r;
  r.branch_id = *str("branch_id");
  r.view = *view;
  r.keep_opening = j["keep_opening"].get<bool>();
  r.opening = *str("opening");
  r.opening_digest = *str("opening_digest");
  return r;
}

size_t OpeningEnd(const Transcript& transcript) {
  for (size_t m = 0; m < transcript.messages.size(); ++m) {
    if (transcript.messages[m].role == Role::kAssistant) return m;
  }
  return transcript.messages.size();
}

std::optional<size_t> AnswerMessage(const Transcript& transcript, size_t create) {
  for (size_t m = create + 1; m < transcript.messages.size(); ++m) {
    Role role = transcript.messages[m].role;
    if (role == Role::kUser) return m;
    if (role != Role::kSystem) return std::nullopt;
  }
  return std::nullopt;
}

bool AnsweredInside(const Transcript& transcript, size_t answer) {
  for (size_t m = answer + 1; m < transcript.messages.size(); ++m) {
    if (transcript.messages[m].role == Role::kAssistant) return true;
  }
  return false;
}

bool IsSummaryRequest(const Transcript& transcript, bool offers_tools) {
  if (!offers_tools) return true;
  if (transcript.messages.empty()) return false;
  // Codex's remote compaction asks for it with an input item.
  for (const Block& block : transcript.messages.back().blocks) {
    if (block.type == "compaction_trigger") return true;
  }
  if (transcript.messages.back().role != Role::kUser) return false;
  // The prompts of the clients that keep their tools in a compaction request (Block::text holds
  // a text block's first kTextPrefixBytes).
  static constexpr std::string_view kPrompts[] = {
      "CRITICAL: Respond with TEXT ONLY",  // Claude Code
  };
  for (const Block& block : transcript.messages.back().blocks) {
    if (block.kind != BlockKind::kText) continue;
    for (std::string_view prompt : kPrompts) {
      if (std::string_view(block.text).starts_with(prompt)) return true;
    }
  }
  return false;
}

std::string OpenBranchText(const std::string& branch_id) {
  return absl::StrCat("[branch ", branch_id,
                      " is open; its work so far is left out of this summary request]");
}

void ReadCreateArguments(std::string_view arguments, OpeningParts& parts) {
  nlohmann::json j = nlohmann::json::parse(arguments, nullptr, false);
  if (!j.is_object()) return;
  auto read = [&](const char* key, std::string& out) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string()) out = it->get<std::string>();
  };
  read("description", parts.description);
  read("prompt", parts.prompt);
}

std::string OpeningText(const OpeningParts& parts) {
  std::string out = absl::StrCat(
      "[contextd] Branch ", parts.branch_id,
      " (isolated view): you see the conversation's opening and this branch's own work, not "
      "the work done since. When done, call branch_return with a summary: the conversation "
      "keeps only that.\n\nDescription: ",
      parts.description, "\n\nPrompt:\n", parts.prompt);
  if (!parts.create_result.empty()) {
    absl::StrAppend(&out, "\n\nbranch_create answered:\n", parts.create_result);
  }
  for (const OpeningCall& call : parts.calls) {
    absl::StrAppend(&out, "\n\nCalled with branch_create: ", call.tool, " ", call.arguments,
                    call.is_error ? "\nIt failed:\n" : "\nIt answered:\n", call.result);
  }
  for (const std::string& text : parts.texts) absl::StrAppend(&out, "\n\n", text);
  if (parts.left_out > 0) {
    absl::StrAppend(&out, "\n\n(", parts.left_out,
                    " non-text block(s) of that answer are not shown in the branch.)");
  }
  return out;
}

}  // namespace contextd::model
