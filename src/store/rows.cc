#include "store/rows.h"

#include "absl/strings/str_cat.h"

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

}  // namespace contextd::store
