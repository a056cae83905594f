// Text the agent reads: the sentences the tool layer puts in a reply's text content (budget
// warning, exhaustion, create/return/status summaries). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "folding/branch_manager.h"

namespace contextd::folding {

// "budget 80% used: 6600/8192 tokens in br_x (1592 left); finish the task and call
// branch_return with a summary".
std::string WarningText(std::string_view branch_id, int64_t used, int64_t allocated);

// For a charge that exhausted its branch (outcome.exhausted): "budget exhausted: 8192/8192
// tokens; branch br_x was returned with partial results; active branch is now br_p" (or "the
// session root"), followed by the partial summary.
std::string ExhaustedText(const ChargeOutcome& outcome);

// For a branch its deadline force-returned between calls: "branch br_x was force-returned
// (deadline passed (timeout 60 s)) with partial results; its summary: <summary>" (without the
// last part when `summary` is empty).
std::string ForceReturnedText(std::string_view branch_id, std::string_view reason,
                              std::string_view summary);

// What a branch_create reply tells the model to do next (in its text and its structured result).
inline constexpr std::string_view kCreateInstructions =
    "Work inside the branch, then call branch_return with a summary of what you found.";

// The text of a branch_create reply: branch_id, depth, budget, parent_budget_remaining,
// deadline, injected context and kCreateInstructions.
std::string CreateText(const CreateResult& result);

// The text of a branch_return reply: the summary as stored, tokens used, tokens folded, the
// branch now active and the children force-returned first. A warning for the parent is not part
// of it: it reaches the model as a notice of the session, like every budget warning.
std::string ReturnText(const ReturnResult& result);

// The branch tree of branch_status as indented lines, one per branch: id, status, depth,
// description, used/total, time left; finished branches with their finish reason.
std::string StatusText(const StatusResult& result);

// RFC 3339 UTC with milliseconds, e.g. "2025-06-15T14:13:20.000Z".
std::string FormatWallMillis(int64_t wall_ms);

}  // namespace contextd::folding
