#include "model/fold.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "model/tool_names.h"
#include "nlohmann/json.hpp"
#include "protocol/contextd_tools.h"

namespace contextd::model {
namespace {

using protocol::kBranchCreateTool;

bool IsHexLower(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The first "br_" + 32 lower-case hex characters in `text`, or "".
std::string FindBranchId(std::string_view text) {
  size_t at = 0;
  while ((at = text.find("br_", at)) != std::string_view::npos) {
    if (at + 35 <= text.size() &&
        std::all_of(text.begin() + at + 3, text.begin() + at + 35, IsHexLower) &&
        (at + 35 == text.size() || !IsHexLower(text[at + 35]))) {
      return std::string(text.substr(at, 35));
    }
    at += 3;
  }
  return "";
}

// The branch a branch_create result names as created: the id after its `"branch_id":` member
// (the structured result clients show) or after "Created branch " (its text), or a result that
// is the id alone; "" otherwise. Not the first id anywhere in it: a refused create's error can
// carry notices about other branches ("branch br_… was force-returned").
std::string CreatedBranchId(std::string_view text) {
  for (std::string_view marker : {"\"branch_id\":", "Created branch "}) {
    size_t at = text.find(marker);
    if (at == std::string_view::npos) continue;
    at += marker.size();
    while (at < text.size() && (text[at] == ' ' || text[at] == '"')) ++at;
    std::string id = FindBranchId(text.substr(at, 35));
    if (!id.empty()) return id;
  }
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string id = FindBranchId(text.substr(i, 35));
  return id.size() == 35 && text.substr(i).size() <= 36 ? id : std::string();
}

// The message answering assistant message `index`'s calls: the first user message after it
// (system messages between are skipped); size() when an assistant message or the end comes first.
size_t AnswerOf(const Transcript& t, size_t index) {
  for (size_t k = index + 1; k < t.messages.size(); ++k) {
    if (t.messages[k].role == Role::kUser) return k;
    if (t.messages[k].role == Role::kAssistant) break;
  }
  return t.messages.size();
}

// The result block answering `call_id` in message `index`, or nullptr.
const Block* FindResult(const Transcript& t, size_t index, const std::string& call_id) {
  if (index >= t.messages.size() || t.messages[index].role != Role::kUser) return nullptr;
  for (const Block& block : t.messages[index].blocks) {
    if (block.kind == BlockKind::kToolResult && block.call_id == call_id) return &block;
  }
  return nullptr;
}

// Whether the model answered after message `end`.
bool AnsweredAfter(const Transcript& t, size_t end) {
  for (size_t k = end + 1; k < t.messages.size(); ++k) {
    if (t.messages[k].role == Role::kAssistant) return true;
  }
  return false;
}

// Where a force-returned branch created in message `create` ends now: the answer to the last
// assistant turn; nullopt while the model's turn is the tail (the client prefilled it).
std::optional<size_t> ForcedEnd(const Transcript& t, size_t create) {
  for (size_t k = t.messages.size(); k-- > create;) {
    if (t.messages[k].role != Role::kAssistant) continue;
    size_t end = AnswerOf(t, k);
    if (end == t.messages.size()) return std::nullopt;
    return end;
  }
  return std::nullopt;
}

struct Candidate {
  std::string branch_id;
  std::string create_call_id;
  size_t create_message = 0;
  bool returned = false;  // a successful branch_return in the transcript
  std::string end_call_id;
  size_t end_message = 0;
};

FoldEdit MakeEdit(const Transcript& t, size_t create, size_t end, const FoldRecord& record) {
  FoldEdit edit;
  edit.create_message = create;
  edit.end_message = end;
  edit.create_call_id = record.create_call_id;
  edit.branch_id = record.branch_id;
  edit.result_text = record.result_text;
  for (const Block& block : t.messages[create].blocks) {
    if (block.kind == BlockKind::kToolCall && block.call_id != record.create_call_id) {
      edit.stub_call_ids.push_back(block.call_id);
    }
  }
  // What the answer to the create turn holds besides results (the client attaches its own
  // context there: after a compaction, the environment and the servers' instructions), and what a
  // person typed inside the span, stay in order; then what the end holds besides results.
  const size_t opened = AnswerOf(t, create);
  if (record.keep_rule >= 2 && opened < t.messages.size()) {
    const std::vector<Block>& blocks = t.messages[opened].blocks;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (blocks[b].kind == BlockKind::kToolResult && blocks[b].call_id == record.create_call_id) {
        edit.create_result = std::make_pair(opened, b);
      }
    }
  }
  for (size_t m = create + 1; m < end && record.keep_rule >= 2; ++m) {
    if (t.messages[m].role != Role::kUser) continue;
    const std::vector<Block>& blocks = t.messages[m].blocks;
    for (size_t b = 0; b < blocks.size(); ++b) {
      const bool kept = m == opened
                            ? blocks[b].kind != BlockKind::kToolResult
                            : blocks[b].kind == BlockKind::kText && !IsHarnessText(blocks[b].text);
      if (kept) edit.kept_blocks.emplace_back(m, b);
    }
  }
  const std::vector<Block>& end_blocks = t.messages[end].blocks;
  for (size_t b = 0; b < end_blocks.size(); ++b) {
    if (end_blocks[b].kind != BlockKind::kToolResult) edit.kept_blocks.emplace_back(end, b);
  }
  return edit;
}

}  // namespace

std::string_view AppendedReminders(std::string_view result_text) {
  size_t at = result_text.find("\n\n<system-reminder>");
  if (at == std::string_view::npos) return {};
  return result_text.substr(at + 2);
}

bool IsHarnessText(std::string_view prefix) {
  size_t i = 0;
  while (i < prefix.size() && std::isspace(static_cast<unsigned char>(prefix[i]))) ++i;
  std::string_view text = prefix.substr(i);
  for (std::string_view tag :
       {"<system-reminder>", "<environment_context>", "<turn_aborted>", "<user_instructions>"}) {
    if (text.starts_with(tag)) return true;
  }
  return false;
}

const char* SkipReasonName(SkipReason reason) {
  switch (reason) {
    case SkipReason::kAnswered:
      return "answered";
    case SkipReason::kMissingEnd:
      return "missing_end";
    case SkipReason::kOverlap:
      return "overlap";
    case SkipReason::kNoCreate:
      return "no_create";
  }
  return "unknown";
}

std::string FoldRecord::Serialize() const {
  nlohmann::ordered_json j;
  j["create_call_id"] = create_call_id;
  j["branch_id"] = branch_id;
  j["forced"] = forced;
  j["end_call_id"] = end_call_id;
  j["end_message_key"] = Hex(end_message_key);
  j["result_text"] = result_text;
  j["keep_rule"] = keep_rule;
  return base::DumpJson(j);
}

absl::StatusOr<FoldRecord> FoldRecord::Parse(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto str = [&](const char* key) -> const std::string* {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  if (!j.is_object() || !str("create_call_id") || !str("branch_id") || !str("end_call_id") ||
      !str("end_message_key") || !str("result_text") || !j.contains("forced") ||
      !j["forced"].is_boolean()) {
    return absl::InternalError("a stored fold record is malformed");
  }
  FoldRecord r;
  r.create_call_id = *str("create_call_id");
  r.branch_id = *str("branch_id");
  r.forced = j["forced"].get<bool>();
  r.end_call_id = *str("end_call_id");
  const std::string& hex = *str("end_message_key");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return absl::InternalError("a stored fold record is malformed");
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]);
    int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return absl::InternalError("a stored fold record is malformed");
    r.end_message_key.push_back(static_cast<char>(hi * 16 + lo));
  }
  r.result_text = *str("result_text");
  r.keep_rule = 1;
  if (auto rule = j.find("keep_rule"); rule != j.end()) {
    if (!rule->is_number_integer() || rule->get<int64_t>() < 1 ||
        rule->get<int64_t>() > kCurrentKeepRule) {
      return absl::InternalError("a stored fold record is malformed");
    }
    r.keep_rule = rule->get<int>();
  }
  return r;
}

std::string FoldedResultText(const BranchFacts& facts, bool forced) {
  // Short: it rides on every later request of the conversation. A branch that ended completed
  // without its return in the transcript (returned from elsewhere) reads as returned.
  if (!forced || facts.status == "completed") {
    return absl::StrCat("[branch ", facts.branch_id, " returned; ", facts.tokens_folded,
                        " tokens folded away]\n", facts.summary);
  }
  return absl::StrCat("[branch ", facts.branch_id, " force-returned (", facts.status, "); ",
                      facts.tokens_used,
                      " tokens folded away. You are back in the parent context; do not call "
                      "branch_return for it.]\n",
                      facts.summary);
}

std::string StubResultText(const std::string&) { return "(folded with the branch)"; }

FoldPlan PlanFolds(const Transcript& t, const std::map<std::string, FoldRecord>& records,
                   const BranchLookup& lookup, const std::set<std::string>* settled) {
  FoldPlan plan;
  std::vector<Candidate> stack;
  std::vector<Candidate> ended;
  std::vector<Candidate> orphans;  // returns without their create (create_call_id: the return's)
  std::set<std::string> seen;      // branch ids claimed by a create
  const size_t n = t.messages.size();
  for (size_t i = 0; i < n; ++i) {
    const Message& m = t.messages[i];
    if (m.role != Role::kAssistant) continue;
    const size_t answer = AnswerOf(t, i);
    for (const Block& block : m.blocks) {
      if (!IsBranchCall(block)) continue;
      const Block* result = FindResult(t, answer, block.call_id);
      if (result == nullptr || result->is_error) continue;
      if (block.contextd_tool == kBranchCreateTool) {
        std::string id = CreatedBranchId(result->text);
        // A branch belongs to the first create that names it.
        if (!id.empty() && !seen.count(id)) {
          seen.insert(id);
          stack.push_back({id, block.call_id, i, false, "", 0});
        }
        continue;
      }
      std::string target = FindBranchId(block.text);
      auto it = stack.end();
      if (target.empty()) {
        if (!stack.empty()) it = stack.end() - 1;
      } else {
        it = std::find_if(stack.begin(), stack.end(),
                          [&](const Candidate& c) { return c.branch_id == target; });
      }
      if (it == stack.end()) {
        // A return whose create is not in the transcript: the client compacted it away (or the
        // branch was opened elsewhere). Nothing to fold it into; reported when it is contextd's.
        std::string id = target.empty() ? CreatedBranchId(result->text) : target;
        if (id.empty()) id = FindBranchId(result->text);
        if (!id.empty() && !seen.count(id))
          orphans.push_back({id, block.call_id, i, true, "", answer});
        continue;
      }
      Candidate done = *it;
      done.returned = true;
      done.end_call_id = block.call_id;
      done.end_message = answer;
      stack.erase(it, stack.end());  // its live children ended with it
      ended.push_back(std::move(done));
    }
  }

  std::vector<FoldEdit> edits;
  auto find_key = [&](const std::string& key, size_t after) -> std::optional<size_t> {
    for (size_t i = after + 1; i < n; ++i) {
      if (t.messages[i].key == key) return i;
    }
    return std::nullopt;
  };
  auto skip = [&](const Candidate& c, SkipReason reason) {
    plan.skipped.push_back({reason, c.branch_id, c.create_call_id});
  };
  // Stored decisions first; then new ones for the ends the model has not answered yet.
  auto consider = [&](const Candidate& c, bool open) {
    auto rec = records.find(c.create_call_id);
    if (rec != records.end()) {
      const FoldRecord& r = rec->second;
      std::optional<size_t> end;
      if (r.forced) {
        end = find_key(r.end_message_key, c.create_message);
      } else if (c.returned && c.end_call_id == r.end_call_id) {
        end = c.end_message;
      }
      if (!end) {
        if (settled == nullptr || !settled->count(c.create_call_id))
          skip(c, SkipReason::kMissingEnd);
        return false;
      }
      edits.push_back(MakeEdit(t, c.create_message, *end, r));
      return true;
    }
    if (settled != nullptr && settled->count(c.create_call_id)) return false;
    std::optional<size_t> end;
    if (open) {
      end = ForcedEnd(t, c.create_message);
    } else {
      end = c.end_message;
    }
    if (!end || *end <= c.create_message) return false;
    std::optional<BranchFacts> facts = lookup ? lookup(c.branch_id) : std::nullopt;
    if (!facts || !facts->ended) return false;
    if (AnsweredAfter(t, *end)) {
      skip(c, SkipReason::kAnswered);
      return false;
    }
    FoldRecord r;
    r.create_call_id = c.create_call_id;
    r.branch_id = c.branch_id;
    r.forced = open;
    if (open) {
      r.end_message_key = t.messages[*end].key;
    } else {
      r.end_call_id = c.end_call_id;
    }
    r.result_text = FoldedResultText(*facts, open);
    edits.push_back(MakeEdit(t, c.create_message, *end, r));
    plan.new_records.push_back(std::move(r));
    return true;
  };
  for (const Candidate& c : ended) consider(c, false);
  for (const Candidate& c : orphans) {
    if (settled != nullptr && settled->count(c.create_call_id)) continue;
    if (AnsweredAfter(t, c.end_message)) continue;  // reported by the request that carried it
    std::optional<BranchFacts> facts = lookup ? lookup(c.branch_id) : std::nullopt;
    if (facts && facts->ended) skip(c, SkipReason::kNoCreate);
  }
  std::vector<std::string> open_ids;
  for (const Candidate& c : stack) {
    if (!consider(c, true)) open_ids.push_back(c.branch_id);
  }
  // A branch folded by force may have had children open in it: they went with it.
  std::sort(edits.begin(), edits.end(), [](const FoldEdit& a, const FoldEdit& b) {
    return a.create_message != b.create_message ? a.create_message < b.create_message
                                                : a.end_message > b.end_message;
  });
  for (FoldEdit& edit : edits) {
    if (!plan.edits.empty()) {
      const FoldEdit& last = plan.edits.back();
      if (edit.create_message < last.end_message) {
        if (edit.end_message > last.end_message &&
            (settled == nullptr || !settled->count(edit.create_call_id))) {
          plan.skipped.push_back({SkipReason::kOverlap, edit.branch_id, edit.create_call_id});
        }
        continue;  // nested in a fold already applied
      }
    }
    plan.edits.push_back(std::move(edit));
  }
  // Open branches inside a fold are gone from the transcript.
  for (const Candidate& c : stack) {
    if (std::find(open_ids.begin(), open_ids.end(), c.branch_id) == open_ids.end()) continue;
    bool inside = std::any_of(plan.edits.begin(), plan.edits.end(), [&](const FoldEdit& e) {
      return c.create_message > e.create_message && c.create_message <= e.end_message;
    });
    if (inside) continue;
    plan.open_branch_id = c.branch_id;
    plan.open_branch_create_message = c.create_message;
    plan.open_branches.push_back({c.branch_id, c.create_message, c.create_call_id});
  }
  return plan;
}

absl::Status ValidateTranscript(const Transcript& t) {
  // The message before `i` that is not a system message (size() when none).
  auto previous = [&](size_t i) {
    while (i-- > 0) {
      if (t.messages[i].role != Role::kSystem) return i;
    }
    return t.messages.size();
  };
  for (size_t i = 0; i < t.messages.size(); ++i) {
    const Message& m = t.messages[i];
    if (m.role == Role::kOther) {
      return absl::InvalidArgumentError(absl::StrCat("message ", i, ": unknown role"));
    }
    if (i == 0 && m.role != Role::kUser) {
      return absl::InvalidArgumentError("message 0: the first message must be the user's");
    }
    // Results: first in a user message, each answering a call of the message before it.
    std::vector<std::string> calls;
    if (size_t p = previous(i); p < t.messages.size() && t.messages[p].role == Role::kAssistant) {
      for (const Block& b : t.messages[p].blocks) {
        if (b.kind == BlockKind::kToolCall) calls.push_back(b.call_id);
      }
    }
    bool past_results = false;
    for (const Block& b : m.blocks) {
      if (b.kind != BlockKind::kToolResult) {
        past_results = true;
        continue;
      }
      if (m.role != Role::kUser) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", i, ": a tool result outside a user message"));
      }
      if (past_results) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", i, ": a tool result after other content"));
      }
      if (std::find(calls.begin(), calls.end(), b.call_id) == calls.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", i, ": result for unknown call ", b.call_id));
      }
    }
    if (m.role != Role::kAssistant) continue;
    const size_t answer = AnswerOf(t, i);
    for (const Block& b : m.blocks) {
      if (b.kind != BlockKind::kToolCall) continue;
      if (answer == t.messages.size()) {
        // The tail: a prefilled turn, or calls the client has not answered yet.
        bool tail = std::all_of(t.messages.begin() + i + 1, t.messages.end(),
                                [](const Message& x) { return x.role == Role::kSystem; });
        if (tail) break;
      }
      if (FindResult(t, answer, b.call_id) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("message ", i, ": call ", b.call_id, " has no result next"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace contextd::model
