#include "store/rows.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace contextd::store {

McpSessionRecord McpSessionFromRow(const Row& row) {
  McpSessionRecord r;
  r.id = row.Text(0);
  r.tenant = row.Text(1);
  r.project = row.Text(2);
  r.project_label = row.Text(3);
  r.project_header = row.Text(4);
  r.protocol_version = row.Text(5);
  r.client_capabilities = row.Text(6);
  r.client_info = row.Text(7);
  r.created_ms = row.Int(8);
  r.last_seen_ms = row.Int(9);
  r.ended_ms = row.IsNull(10) ? 0 : row.Int(10);
  r.end_reason = row.Text(11);
  return r;
}

absl::StatusOr<folding::Branch> BranchFromRow(const Row& row) {
  folding::Branch b;
  b.id = row.Text(0);
  b.session.tenant = row.Text(1);
  b.session.project = row.Text(2);
  b.session.session_id = row.Text(3);
  b.parent_id = row.IsNull(4) ? std::string() : row.Text(4);
  b.depth = static_cast<int>(row.Int(5));
  b.description = row.Text(6);
  b.prompt = row.Text(7);
  std::string status = row.Text(8);
  auto parsed = folding::ParseBranchStatus(status);
  if (!parsed.ok()) {
    return absl::DataLossError(
        absl::StrCat("branch ", b.id, " has unknown status \"", status, "\""));
  }
  b.status = *parsed;
  b.budget_allocated = row.Int(9);
  b.tokens_used = row.Int(10);
  b.reserved_for_children = row.Int(11);
  b.deadline_wall_ms = row.Int(12);
  b.created_at_ms = row.Int(13);
  b.finished_at_ms = row.IsNull(14) ? 0 : row.Int(14);
  b.summary = row.Text(15);
  b.finish_reason = row.Text(16);
  b.memory_queued = row.Bool(17);
  return b;
}

folding::InjectedContext InjectionFromRow(const Row& row) {
  folding::InjectedContext injected;
  injected.kind = row.Text(0);
  injected.ref = row.Text(1);
  injected.text = row.Text(2);
  injected.tokens = row.Int(3);
  return injected;
}

absl::StatusOr<memory::MemoryItem> MemoryItemFromRow(const Row& row) {
  memory::MemoryItem m;
  m.id = row.Text(0);
  m.tenant = row.Text(1);
  m.project = row.Text(2);
  auto scope = memory::ParseScope(row.Text(3));
  auto status = memory::ParseStatus(row.Text(4));
  auto outcome = memory::ParseOutcome(row.Text(5));
  if (!scope.ok() || !status.ok() || !outcome.ok()) {
    return absl::InternalError(absl::StrCat("memory ", m.id, ": corrupt row"));
  }
  m.scope = *scope;
  m.status = *status;
  m.outcome = *outcome;
  m.title = row.Text(6);
  m.description = row.Text(7);
  m.content = row.Text(8);
  std::string tags = row.Text(9);
  if (!tags.empty()) m.tags = absl::StrSplit(tags, '\n');
  m.source.branch_id = row.Text(10);
  m.source.description = row.Text(11);
  m.source.prompt = row.Text(12);
  m.origin = row.Text(13);
  m.created_at_ms = row.Int(14);
  m.updated_at_ms = row.Int(15);
  m.use_count = row.Int(16);
  m.helpful_count = row.Int(17);
  m.unhelpful_count = row.Int(18);
  m.success_count = row.Int(19);
  m.failure_count = row.Int(20);
  m.merged_into = row.Text(21);
  return m;
}

trail::Scope ScopeFromRow(const Row& row) {
  trail::Scope s;
  s.id = row.Text(0);
  s.session.tenant = row.Text(1);
  s.session.project = row.Text(2);
  s.session.session_id = row.Text(3);
  s.kind = trail::ParseScopeKind(row.Text(4)).value_or(trail::ScopeKind::kBranch);
  s.parent_id = row.IsNull(5) ? "" : row.Text(5);
  s.description = row.Text(6);
  s.status = row.Text(7) == "folded" ? trail::ScopeStatus::kFolded : trail::ScopeStatus::kOpen;
  s.summary = row.Text(8);
  s.summary_tokens = row.Int(9);
  s.created_at_ms = row.Int(10);
  s.folded_at_ms = row.IsNull(11) ? 0 : row.Int(11);
  s.event_count = row.Int(12);
  s.event_tokens = row.Int(13);
  return s;
}

absl::StatusOr<trail::Event> EventFromRow(const Row& row) {
  trail::Event e;
  e.seq = row.Int(0);
  e.scope_id = row.Text(1);
  auto kind = trail::ParseEventKind(row.Text(2));
  if (!kind.ok()) return kind.status();
  e.kind = *kind;
  e.label = row.Text(3);
  e.payload = row.Bytes(4);
  e.payload_hash = row.Text(5);
  e.tokens = row.Int(6);
  e.is_error = row.Bool(7);
  e.at_ms = row.Int(8);
  return e;
}

}  // namespace contextd::store
