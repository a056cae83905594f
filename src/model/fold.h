// The fold core, F(.) for branches: finds the branches of a transcript (a branch_create call, the
// branch id in its result, the matching branch_return), decides which are folded and where, and
// says which messages go. Provider-neutral: an adapter renders the plan. Everything between the
// create turn and the end folds, whatever the client put there (system messages, reminders, any
// tool, media, thinking) but for the text a person typed, which stays after the folded result.
// A fold is decided once, in the first request that carries its end (branch_return's result, or
// the answer at which contextd force-returned the branch), as a FoldRecord the caller stores;
// every later request applies the stored records, so the same transcript always folds the same
// way. Pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch_ledger.h"
#include "model/transcript.h"

namespace contextd::model {

// What the store says of a branch found in a transcript (the ledger's answer).
using BranchFacts = folding::BranchFacts;
// Looks a branch id up (within the request's tenant); nullopt when unknown there.
using BranchLookup = std::function<std::optional<BranchFacts>(const std::string& branch_id)>;

// A durable fold decision (RewriteKind::kFold, keyed by create_call_id).
struct FoldRecord {
  std::string create_call_id;
  std::string branch_id;
  bool forced = false;          // force-returned: ends at end_message_key, not at a return
  std::string end_call_id;      // !forced: the branch_return call whose result ends the branch
  std::string end_message_key;  // forced: key of the last message folded (the tail then)
  std::string result_text;      // what the tool_result standing for the branch says
  // Which blocks of the span stay (FoldEdit::kept_blocks), as the rule was when the fold was
  // decided, so that a stored fold renders the same bytes after an upgrade: 1 (decision 0015)
  // keeps the end's blocks besides results; 2 (0033) also the create answer's blocks besides
  // results and the text a person typed inside the span. A record stored without it is 1.
  int keep_rule = kCurrentKeepRule;
  static constexpr int kCurrentKeepRule = 2;

  std::string Serialize() const;
  static absl::StatusOr<FoldRecord> Parse(std::string_view text);
};

// One fold applied to a transcript: messages (create_message, end_message] are replaced by one
// user message: the tool_result for create_call_id (result_text), a stub result for each other
// call of the create message (stub_call_ids, in order), then the blocks of the span that stay
// (kept_blocks, (message, block) in transcript order): the text a person typed inside the span,
// and the blocks of end_message that are not tool results.
struct FoldEdit {
  size_t create_message = 0;
  size_t end_message = 0;
  std::string create_call_id;
  std::string branch_id;
  std::string result_text;
  std::vector<std::string> stub_call_ids;
  std::vector<std::pair<size_t, size_t>> kept_blocks;
  // Keep rule 2: the create's own result block (message, block), whose client-added reminders
  // (text after the result, `<system-reminder>` on) ride on after result_text; nullopt otherwise.
  std::optional<std::pair<size_t, size_t>> create_result;
};

// Keep rule 2: what the client appended to a tool result's text (Claude Code appends its
// `<system-reminder>` blocks to the result string: after a compaction, the environment and the
// servers' instructions), from the first reminder that starts a paragraph; "" when none.
std::string_view AppendedReminders(std::string_view result_text);

// Why a branch that ended was left whole (a metric label; docs/decisions/0032). Each is a case
// where folding would change what the model already answered to, or lose a stored decision:
//   kAnswered    the model has answered since the branch ended, so its later turns (and their
//                thinking) were produced on the unfolded prefix: the end was never in a request
//                contextd could decide in (contextd learnt of the branch's end too late, or the
//                conversation's state was lost)
//   kMissingEnd  a stored fold's end is not in the transcript (the client edited its history)
//   kOverlap     the branch straddles another fold's edge (its create before, its end after)
//   kNoCreate    the branch returned in a transcript that no longer holds its create turn (the
//                client compacted it away while the branch was open): nothing to fold into
enum class SkipReason { kAnswered, kMissingEnd, kOverlap, kNoCreate };
const char* SkipReasonName(SkipReason reason);

// A branch left whole by a plan.
struct FoldSkip {
  SkipReason reason = SkipReason::kAnswered;
  std::string branch_id;
  std::string create_call_id;
};

// A branch open at the end of a transcript.
struct OpenBranch {
  std::string branch_id;
  size_t create_message = 0;   // the message whose call created it
  std::string create_call_id;  // that call's id
};

struct FoldPlan {
  std::vector<FoldEdit> edits;          // disjoint, in transcript order
  std::vector<FoldRecord> new_records;  // decided by this request: store before forwarding
  std::vector<FoldSkip> skipped;        // branches left whole now
  // The innermost branch still open at the end of the transcript ("" = root), with the index of
  // the message that created it (its span runs from there to the tail).
  std::string open_branch_id;
  size_t open_branch_create_message = 0;
  std::vector<OpenBranch> open_branches;  // all open at the tail, outermost first
};

// Whether a text block of a user message is the client's own (a `<system-reminder>`, Codex's
// `<environment_context>`): folded with its span. Anything else a user message holds inside a
// span is what the person typed, and stays. `prefix`: the text's opening (Block::text).
bool IsHarnessText(std::string_view prefix);

// The text of the tool_result that stands for a folded branch.
std::string FoldedResultText(const BranchFacts& facts, bool forced);
// The stub result of another call made in the create turn (it keeps the call paired).
std::string StubResultText(const std::string& branch_id);

// Plans the folds of `transcript`. `records`: the stored decisions (by create call id).
// A returned branch without a record is decided now if the model has not answered since its
// return's result (wherever that result stands: what follows it stays); one whose store entry
// ended without a return in the transcript (force-returned) folds up to the answer to the last
// assistant turn. `lookup` is called for those. `settled`: create call ids whose skip was
// reported before: left whole again without a lookup and not reported again.
FoldPlan PlanFolds(const Transcript& transcript, const std::map<std::string, FoldRecord>& records,
                   const BranchLookup& lookup, const std::set<std::string>* settled = nullptr);

// Checks a transcript as a provider would: the first message is the user's, every tool call is
// answered first in the next user message, no result without its call; system messages between
// them are allowed. InvalidArgument naming the message otherwise.
absl::Status ValidateTranscript(const Transcript& transcript);

}  // namespace contextd::model
