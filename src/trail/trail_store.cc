#include "trail/trail_store.h"

#include "base/str_cat.h"

namespace contextd::trail {

std::string SessionRef::ToString() const { return base::StrCat(tenant, "/", project, "/", session_id); }

const char* ScopeKindName(ScopeKind kind) {
  return kind == ScopeKind::kSession ? "session" : "branch";
}

const char* ScopeStatusName(ScopeStatus status) {
  return status == ScopeStatus::kOpen ? "open" : "folded";
}

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kToolCall:
      return "tool_call";
    case EventKind::kToolResult:
      return "tool_result";
    case EventKind::kBranchCreated:
      return "branch_created";
    case EventKind::kBranchReturned:
      return "branch_returned";
    case EventKind::kWarning:
      return "warning";
    case EventKind::kForceReturn:
      return "force_return";
  }
  return "unknown";
}

absl::StatusOr<EventKind> ParseEventKind(std::string_view name) {
  for (EventKind k : {EventKind::kToolCall, EventKind::kToolResult, EventKind::kBranchCreated,
                      EventKind::kBranchReturned, EventKind::kWarning, EventKind::kForceReturn}) {
    if (name == EventKindName(k)) return k;
  }
  return absl::InvalidArgumentError(base::StrCat("unknown trail event kind '", name, "'"));
}

}  // namespace contextd::trail
