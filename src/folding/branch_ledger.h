// BranchLedger: the one way the gateways account for what passes through them to the agent or
// the model: look a branch up, charge a session's branch with what it received, record the tool
// calls in the trail, and keep in the trail the results about to be folded away. The MCP gateway
// charges each proxied result through it; the model gateway's context manager charges each
// branch's span, records the built-in tools' calls and archives what auto-fold folds.
// Thread-safety: every method may be called from any thread, the engine executor included (the
// implementation, EngineBranchLedger, runs the engine's part on the executor).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch.h"
#include "folding/branch_manager.h"

namespace contextd::folding {

// What a gateway needs to know of a branch.
struct BranchFacts {
  std::string branch_id;
  bool ended = false;         // completed, timeout, budget_exhausted or failed
  std::string status;         // BranchStatusName: "completed", "timeout", ...
  std::string finish_reason;  // why a force-returned branch ended
  std::string summary;        // scrubbed, as stored
  int64_t tokens_used = 0;
  int64_t tokens_folded = 0;  // tokens_used minus the summary's tokens
  SessionKey session;         // its owner
};

// What a charge did.
struct BranchCharge {
  ChargeOutcome outcome;
  // WarningText for the charge that first brought the branch to 80% of its budget, else "".
  std::string warning;
};

// A tool call and its result as they reached the agent or the model (scrubbed).
struct ToolCallRecord {
  std::string branch_id;  // the branch open when it was made ("" = the session root)
  std::string tool;       // as named where it was made ("Read", "fs__read_file", ...)
  std::string arguments;  // the call's input (JSON)
  std::string result;
  bool is_error = false;
  int64_t tokens_arguments = 0;
  int64_t tokens_result = 0;
};

// Where the trail keeps a tool result (trail_unfold's scope_id and event).
struct TrailRef {
  std::string scope_id;
  int64_t event = 0;
};

class BranchLedger {
 public:
  virtual ~BranchLedger() = default;

  // Branch `id` when `tenant` owns it; nullopt when it is unknown, another tenant's, or cannot be
  // read now (logged).
  virtual std::optional<BranchFacts> Find(std::string_view tenant, std::string_view id) = 0;

  // Charges `record` to `branch_id` of `session` (empty: its innermost active branch; if none,
  // the session root, which has no budget). Errors as BranchManager::Charge: NotFound (unknown or
  // another session's), FailedPrecondition (the branch ended), Internal/Unavailable (store).
  virtual absl::StatusOr<BranchCharge> Charge(const SessionKey& session, std::string_view branch_id,
                                              const ChargeRecord& record) = 0;

  // Records `calls` in `session`'s trail, each in its branch's scope (the session root when it
  // has none, or when that scope is gone). Asynchronous: the trail may hold them only after this
  // returns, in the order Record and Archive were called; failures are logged.
  virtual void Record(const SessionKey& session, std::vector<ToolCallRecord> calls) = 0;

  // Makes sure `session`'s trail keeps each of `calls` (found where Record put it, else recorded
  // now in the session root) and says where: one entry per call, nullopt where it could not.
  // Synchronous: runs after every Record called before it.
  virtual std::vector<std::optional<TrailRef>> Archive(
      const SessionKey& session, const std::vector<ToolCallRecord>& calls) = 0;
};

}  // namespace contextd::folding
