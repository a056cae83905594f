// EngineBranchLedger: the BranchLedger of a running server, over the engine's BranchManager, its
// BranchStore and its trail. Lookups read the store from the calling thread; charges, recordings
// and archiving run on the engine executor (inline when called there, else posted: Charge and
// Archive wait for theirs, Record does not).
// Thread-safety: any thread (BranchLedger). The executor must be running for a call made off it
// to return.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/executor.h"
#include "folding/branch_ledger.h"
#include "folding/branch_manager.h"
#include "folding/branch_store.h"
#include "tokens/token_counter.h"
#include "trail/trail.h"

namespace contextd::folding {

class EngineBranchLedger final : public BranchLedger {
 public:
  // Everything must outlive the ledger. `trail` may be null: Record then keeps nothing and
  // Archive answers nullopt for every call.
  EngineBranchLedger(base::Executor& executor, BranchManager& manager, BranchStore& store,
                     trail::Trail* trail, const tokens::TokenCounter& counter);

  std::optional<BranchFacts> Find(std::string_view tenant, std::string_view id) override;
  absl::StatusOr<BranchCharge> Charge(const SessionKey& session, std::string_view branch_id,
                                      const ChargeRecord& record) override;
  void Record(const SessionKey& session, std::vector<ToolCallRecord> calls) override;
  std::vector<std::optional<TrailRef>> Archive(const SessionKey& session,
                                               const std::vector<ToolCallRecord>& calls) override;

 private:
  // Runs `task` on the executor and waits for it (inline when called on the executor).
  void RunOnExecutor(const base::Executor::Task& task);

  base::Executor& executor_;
  BranchManager& manager_;
  BranchStore& store_;
  trail::Trail* const trail_;
  const tokens::TokenCounter& counter_;
};

}  // namespace contextd::folding
