// FakeBranchLedger: a folding::BranchLedger for the context manager's tests, each part a function
// the test sets (a part left null knows no branch, charges nothing, records nothing, keeps
// nothing). Calls are synchronous, on the caller's thread. Test-only; not thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "folding/branch_ledger.h"

namespace contextd::model::testing {

class FakeBranchLedger final : public folding::BranchLedger {
 public:
  using FindFn = std::function<std::optional<folding::BranchFacts>(const std::string& tenant,
                                                                   const std::string& id)>;
  // (tenant, branch id, label, text, tokens) -> what the charge did; nullopt: not charged.
  using ChargeFn = std::function<std::optional<folding::BranchCharge>(
      const std::string& tenant, const std::string& id, const std::string& label,
      const std::string& text, int64_t tokens)>;
  using RecordFn = std::function<void(const folding::SessionKey& session,
                                      const std::vector<folding::ToolCallRecord>& calls)>;
  using ArchiveFn = std::function<std::vector<std::optional<folding::TrailRef>>(
      const folding::SessionKey& session, const std::vector<folding::ToolCallRecord>& calls)>;

  explicit FakeBranchLedger(FindFn find = nullptr, ChargeFn charge = nullptr,
                            RecordFn record = nullptr, ArchiveFn archive = nullptr)
      : find_(std::move(find)),
        charge_(std::move(charge)),
        record_(std::move(record)),
        archive_(std::move(archive)) {}

  std::optional<folding::BranchFacts> Find(std::string_view tenant, std::string_view id) override {
    if (!find_) return std::nullopt;
    return find_(std::string(tenant), std::string(id));
  }
  absl::StatusOr<folding::BranchCharge> Charge(const folding::SessionKey& session,
                                               std::string_view branch_id,
                                               const folding::ChargeRecord& record) override {
    std::optional<folding::BranchCharge> charged;
    if (charge_) {
      charged = charge_(session.tenant, std::string(branch_id), record.label, record.text,
                        record.tokens.value_or(0));
    }
    if (!charged) return absl::FailedPreconditionError("not charged");
    return *std::move(charged);
  }
  void Record(const folding::SessionKey& session,
              std::vector<folding::ToolCallRecord> calls) override {
    if (record_) record_(session, calls);
  }
  std::vector<std::optional<folding::TrailRef>> Archive(
      const folding::SessionKey& session,
      const std::vector<folding::ToolCallRecord>& calls) override {
    if (!archive_) return std::vector<std::optional<folding::TrailRef>>(calls.size());
    return archive_(session, calls);
  }

 private:
  const FindFn find_;
  const ChargeFn charge_;
  const RecordFn record_;
  const ArchiveFn archive_;
};

}  // namespace contextd::model::testing
