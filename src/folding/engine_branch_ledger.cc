#include "folding/engine_branch_ledger.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "folding/text.h"

namespace contextd::folding {
namespace {

trail::SessionRef TrailSession(const SessionKey& session) {
  return trail::SessionRef{session.tenant, session.project, session.session_id};
}

}  // namespace

EngineBranchLedger::EngineBranchLedger(base::Executor& executor, BranchManager& manager,
                                       BranchStore& store, trail::Trail* trail,
                                       const tokens::TokenCounter& counter)
    : executor_(executor), manager_(manager), store_(store), trail_(trail), counter_(counter) {}

void EngineBranchLedger::RunOnExecutor(const base::Executor::Task& task) {
  if (executor_.InExecutor()) {
    task();
    return;
  }
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  executor_.Post([&] {
    base::RunCatching("executor", task);
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
    done_cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return done; });
}

std::optional<BranchFacts> EngineBranchLedger::Find(std::string_view tenant, std::string_view id) {
  auto branch = store_.Get(id);
  if (!branch.ok()) {
    base::LogWarn(absl::StrCat("branch lookup: ", branch.status().message()));
    return std::nullopt;
  }
  if (!branch->has_value() || (*branch)->session.tenant != tenant) return std::nullopt;
  const Branch& b = **branch;
  BranchFacts facts;
  facts.branch_id = b.id;
  facts.session = b.session;
  facts.ended = IsTerminal(b.status);
  facts.status = BranchStatusName(b.status);
  facts.finish_reason = b.finish_reason;
  facts.summary = b.summary;
  facts.tokens_used = b.tokens_used;
  facts.tokens_folded =
      std::max<int64_t>(0, b.tokens_used - static_cast<int64_t>(counter_.Count(b.summary)));
  return facts;
}

absl::StatusOr<BranchCharge> EngineBranchLedger::Charge(const SessionKey& session,
                                                        std::string_view branch_id,
                                                        const ChargeRecord& record) {
  absl::StatusOr<ChargeOutcome> outcome = absl::InternalError("the charge did not run");
  RunOnExecutor([&] { outcome = manager_.Charge(session, branch_id, record); });
  if (!outcome.ok()) return outcome.status();
  BranchCharge charge;
  if (outcome->warning_crossed) {
    charge.warning = WarningText(outcome->branch_id, outcome->used, outcome->allocated);
  }
  charge.outcome = *std::move(outcome);
  return charge;
}

void EngineBranchLedger::Record(const SessionKey& session, std::vector<ToolCallRecord> calls) {
  if (trail_ == nullptr || calls.empty()) return;
  executor_.Post([trail = trail_, session = TrailSession(session), calls = std::move(calls)] {
    for (const ToolCallRecord& call : calls) {
      auto recorded =
          trail->RecordToolCall(session, call.branch_id, call.tool, call.arguments, call.result,
                                call.tokens_arguments, call.tokens_result, call.is_error);
      if (!recorded.ok() && !call.branch_id.empty()) {
        // The branch's scope is gone (folded meanwhile): the session root keeps it.
        recorded = trail->RecordToolCall(session, "", call.tool, call.arguments, call.result,
                                         call.tokens_arguments, call.tokens_result, call.is_error);
      }
      if (!recorded.ok()) {
        base::LogWarn(
            absl::StrCat("trail: recording ", call.tool, ": ", recorded.status().message()));
      }
    }
  });
}

std::vector<std::optional<TrailRef>> EngineBranchLedger::Archive(
    const SessionKey& session, const std::vector<ToolCallRecord>& calls) {
  std::vector<std::optional<TrailRef>> refs(calls.size());
  if (trail_ == nullptr) return refs;
  const trail::SessionRef where = TrailSession(session);
  RunOnExecutor([&] {
    for (size_t i = 0; i < calls.size(); ++i) {
      const ToolCallRecord& call = calls[i];
      auto kept =
          trail_->FindOrRecordToolCall(where, "", call.tool, call.arguments, call.result,
                                       call.tokens_arguments, call.tokens_result, call.is_error);
      if (!kept.ok()) {
        base::LogWarn(absl::StrCat("trail: keeping an auto-folded ", call.tool,
                                   " result: ", kept.status().message()));
        continue;
      }
      refs[i] = TrailRef{kept->scope_id, kept->result_seq};
    }
  });
  return refs;
}

}  // namespace contextd::folding
