#include "trail/trail_store.h"

#include "base/str_cat.h"

namespace contextd::trail {

std::string SessionRef::ToString() const {
  return base::StrCat(tenant, "/", project, "/", session_id);
}

const char* ScopeKindName(ScopeKind kind) {
  switch (kind) {
    case ScopeKind::kSession:
      return "session";
    case ScopeKind::kBranch:
      return "branch";
    case ScopeKind::kAuto:
      return "auto";
  }
  return "unknown";
}

absl::StatusOr<ScopeKind> ParseScopeKind(std::string_view name) {
  for (ScopeKind k : {ScopeKind::kSession, ScopeKind::kBranch, ScopeKind::kAuto}) {
    if (name == ScopeKindName(k)) return k;
  }
  return absl::InvalidArgumentError(base::StrCat("unknown trail scope kind '", name, "'"));
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
    case EventKind::kAutoScopeOpened:
      return "auto_scope_opened";
  }
  return "unknown";
}

absl::StatusOr<EventKind> ParseEventKind(std::string_view name) {
  for (EventKind k : {EventKind::kToolCall, EventKind::kToolResult, EventKind::kBranchCreated,
                      EventKind::kBranchReturned, EventKind::kWarning, EventKind::kForceReturn,
                      EventKind::kAutoScopeOpened}) {
    if (name == EventKindName(k)) return k;
  }
  return absl::InvalidArgumentError(base::StrCat("unknown trail event kind '", name, "'"));
}

}  // namespace contextd::trail
