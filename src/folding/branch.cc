#include "folding/branch.h"

#include "absl/strings/str_cat.h"
#include "folding/internal/sv.h"

namespace contextd::folding {

using internal::Sv;

const char* BranchStatusName(BranchStatus status) {
  switch (status) {
    case BranchStatus::kCreated:
      return "created";
    case BranchStatus::kActive:
      return "active";
    case BranchStatus::kCompleted:
      return "completed";
    case BranchStatus::kTimeout:
      return "timeout";
    case BranchStatus::kBudgetExhausted:
      return "budget_exhausted";
    case BranchStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

absl::StatusOr<BranchStatus> ParseBranchStatus(std::string_view name) {
  for (BranchStatus s :
       {BranchStatus::kCreated, BranchStatus::kActive, BranchStatus::kCompleted,
        BranchStatus::kTimeout, BranchStatus::kBudgetExhausted, BranchStatus::kFailed}) {
    if (BranchStatusName(s) == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown branch status \"", Sv(name), "\""));
}

bool IsTerminal(BranchStatus status) {
  return status != BranchStatus::kCreated && status != BranchStatus::kActive;
}

bool IsValidTransition(BranchStatus from, BranchStatus to) {
  switch (from) {
    case BranchStatus::kCreated:
      return to == BranchStatus::kActive || to == BranchStatus::kFailed;
    case BranchStatus::kActive:
      return to == BranchStatus::kCompleted || to == BranchStatus::kTimeout ||
             to == BranchStatus::kBudgetExhausted || to == BranchStatus::kFailed;
    default:
      return false;
  }
}

absl::Status CheckTransition(std::string_view branch_id, BranchStatus from, BranchStatus to) {
  if (IsValidTransition(from, to)) return absl::OkStatus();
  std::string why = IsTerminal(from) ? absl::StrCat(" (", BranchStatusName(from), " is final)")
                                     : std::string(" (not in the transition table)");
  return absl::FailedPreconditionError(absl::StrCat("branch ", Sv(branch_id), " cannot go from ",
                                                    BranchStatusName(from), " to ",
                                                    BranchStatusName(to), why));
}

std::string SessionKey::ToString() const {
  return absl::StrCat(tenant, "/", project, "/", session_id);
}

size_t SessionKeyHash::operator()(const SessionKey& key) const {
  std::hash<std::string> h;
  size_t v = h(key.tenant);
  v = v * 1000003u ^ h(key.project);
  v = v * 1000003u ^ h(key.session_id);
  return v;
}

size_t Utf8Length(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string_view Utf8Prefix(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (chars == max_chars) return text.substr(0, i);
      ++chars;
    }
  }
  return text;
}

}  // namespace contextd::folding
