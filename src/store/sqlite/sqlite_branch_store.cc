#include "store/sqlite/sqlite_branch_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/sqlite/sqlite_outbox_store.h"

namespace contextd::store {
namespace {

using folding::Branch;
using folding::BranchStatus;

constexpr char kBranchColumns[] =
    "id, tenant, project, session_id, parent_id, depth, description, prompt, status, "
    "budget_allocated, tokens_used, reserved_for_children, deadline_ms, created_at_ms, "
    "finished_at_ms, summary, finish_reason, memory_queued";

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteBranchStore>> SqliteBranchStore::Open(
    const std::string& path, const DatabaseOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  return Create(std::shared_ptr<Database>(std::move(db)));
}

absl::StatusOr<std::unique_ptr<SqliteBranchStore>> SqliteBranchStore::Create(
    std::shared_ptr<Database> db) {
  std::unique_ptr<SqliteBranchStore> store(new SqliteBranchStore(std::move(db)));
  RETURN_IF_ERROR(store->PrepareAll());
  return store;
}

absl::Status SqliteBranchStore::PrepareAll() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(insert_,
                   db_->Prepare(absl::StrCat("INSERT INTO branches (", kBranchColumns,
                                             ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")));
  ASSIGN_OR_RETURN(insert_injection_,
                   db_->Prepare("INSERT INTO branch_injections (branch_id, ord, kind, ref, text, "
                                "tokens) VALUES (?,?,?,?,?,?)"));
  ASSIGN_OR_RETURN(update_,
                   db_->Prepare("UPDATE branches SET status = ?, tokens_used = ?, "
                                "reserved_for_children = ?, summary = ?, finish_reason = ?, "
                                "finished_at_ms = ?, memory_queued = ? WHERE id = ?"));
  ASSIGN_OR_RETURN(insert_outbox_, db_->Prepare(kSqliteInsertOutboxSql));
  ASSIGN_OR_RETURN(insert_charge_,
                   db_->Prepare("INSERT INTO branch_charges (branch_id, at_ms, kind, label, "
                                "excerpt, tokens) VALUES (?,?,?,?,?,?)"));
  ASSIGN_OR_RETURN(
      get_, db_->Prepare(absl::StrCat("SELECT ", kBranchColumns, " FROM branches WHERE id = ?")));
  ASSIGN_OR_RETURN(list_session_,
                   db_->Prepare(absl::StrCat("SELECT ", kBranchColumns,
                                             " FROM branches WHERE tenant = ? AND project = ? AND "
                                             "session_id = ? ORDER BY rowid")));
  ASSIGN_OR_RETURN(list_live_,
                   db_->Prepare(absl::StrCat("SELECT ", kBranchColumns,
                                             " FROM branches WHERE status IN ('created', "
                                             "'active') ORDER BY rowid")));
  ASSIGN_OR_RETURN(injections_,
                   db_->Prepare("SELECT kind, ref, text, tokens FROM branch_injections WHERE "
                                "branch_id = ? ORDER BY ord"));
  ASSIGN_OR_RETURN(recent_charges_,
                   db_->Prepare("SELECT at_ms, kind, label, excerpt, tokens FROM branch_charges "
                                "WHERE branch_id = ? ORDER BY seq DESC LIMIT ?"));
  ASSIGN_OR_RETURN(count_charges_,
                   db_->Prepare("SELECT COUNT(*) FROM branch_charges WHERE branch_id = ?"));
  return absl::OkStatus();
}

absl::Status SqliteBranchStore::Commit(const folding::BranchWrite& write) {
  if (write.empty()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  return db_->EndWrite(CommitLocked(write));
}

absl::Status SqliteBranchStore::CommitLocked(const folding::BranchWrite& write) {
  for (const Branch& b : write.inserts) {
    ResetOnExit reset(insert_);
    insert_.Bind(1, b.id);
    insert_.Bind(2, b.session.tenant);
    insert_.Bind(3, b.session.project);
    insert_.Bind(4, b.session.session_id);
    if (b.parent_id.empty()) {
      insert_.BindNull(5);
    } else {
      insert_.Bind(5, b.parent_id);
    }
    insert_.Bind(6, static_cast<int64_t>(b.depth));
    insert_.Bind(7, b.description);
    insert_.Bind(8, b.prompt);
    insert_.Bind(9, std::string_view(folding::BranchStatusName(b.status)));
    insert_.Bind(10, b.budget_allocated);
    insert_.Bind(11, b.tokens_used);
    insert_.Bind(12, b.reserved_for_children);
    insert_.Bind(13, b.deadline_wall_ms);
    insert_.Bind(14, b.created_at_ms);
    if (b.finished_at_ms == 0) {
      insert_.BindNull(15);
    } else {
      insert_.Bind(15, b.finished_at_ms);
    }
    insert_.Bind(16, b.summary);
    insert_.Bind(17, b.finish_reason);
    insert_.Bind(18, static_cast<int64_t>(b.memory_queued ? 1 : 0));
    absl::Status st = insert_.Run();
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("insert branch ", b.id, ": ", st.message()));
    }
    for (size_t i = 0; i < b.injected_context.size(); ++i) {
      const folding::InjectedContext& c = b.injected_context[i];
      ResetOnExit reset_inj(insert_injection_);
      insert_injection_.Bind(1, b.id);
      insert_injection_.Bind(2, static_cast<int64_t>(i));
      insert_injection_.Bind(3, c.kind);
      insert_injection_.Bind(4, c.ref);
      insert_injection_.Bind(5, c.text);
      insert_injection_.Bind(6, c.tokens);
      RETURN_IF_ERROR(insert_injection_.Run());
    }
  }
  for (const folding::BranchUpdate& u : write.updates) {
    ResetOnExit reset(update_);
    update_.Bind(1, std::string_view(folding::BranchStatusName(u.status)));
    update_.Bind(2, u.tokens_used);
    update_.Bind(3, u.reserved_for_children);
    update_.Bind(4, u.summary);
    update_.Bind(5, u.finish_reason);
    if (u.finished_at_ms == 0) {
      update_.BindNull(6);
    } else {
      update_.Bind(6, u.finished_at_ms);
    }
    update_.Bind(7, static_cast<int64_t>(u.memory_queued ? 1 : 0));
    update_.Bind(8, u.id);
    RETURN_IF_ERROR(update_.Run());
    if (db_->Changes() != 1) {
      return absl::NotFoundError(absl::StrCat("update of unknown branch ", u.id));
    }
  }
  for (const folding::ChargeRow& c : write.charges) {
    ResetOnExit reset(insert_charge_);
    insert_charge_.Bind(1, c.branch_id);
    insert_charge_.Bind(2, c.at_ms);
    insert_charge_.Bind(3, c.kind);
    insert_charge_.Bind(4, c.label);
    insert_charge_.Bind(5, c.excerpt);
    insert_charge_.Bind(6, c.tokens);
    absl::Status st = insert_charge_.Run();
    if (!st.ok()) {
      return absl::Status(st.code(),
                          absl::StrCat("charge to branch ", c.branch_id, ": ", st.message()));
    }
  }
  // The events of this change, in its transaction (decision 0027). One process writes a SQLite
  // file: the rows need no owner.
  for (const folding::OutboxEvent& e : write.events) {
    RETURN_IF_ERROR(InsertOutboxRow(insert_outbox_, e, ""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Branch>> SqliteBranchStore::ReadBranches(Statement& st) {
  std::vector<Branch> out;
  {
    ResetOnExit reset(st);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(Branch b, BranchFromRow(SqliteRow(st)));
      out.push_back(std::move(b));
    }
  }
  for (Branch& b : out) {
    ResetOnExit reset(injections_);
    injections_.Bind(1, b.id);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, injections_.Step());
      if (!row) break;
      b.injected_context.push_back(InjectionFromRow(SqliteRow(injections_)));
    }
  }
  return out;
}

absl::StatusOr<std::optional<Branch>> SqliteBranchStore::Get(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  get_.Bind(1, id);
  ASSIGN_OR_RETURN(std::vector<Branch> rows, ReadBranches(get_));
  if (rows.empty()) return std::optional<Branch>();
  return std::optional<Branch>(std::move(rows.front()));
}

absl::StatusOr<std::vector<Branch>> SqliteBranchStore::ListSession(
    const folding::SessionKey& session) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  list_session_.Bind(1, session.tenant);
  list_session_.Bind(2, session.project);
  list_session_.Bind(3, session.session_id);
  return ReadBranches(list_session_);
}

absl::StatusOr<std::vector<Branch>> SqliteBranchStore::ListLive() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  return ReadBranches(list_live_);
}

absl::StatusOr<folding::BranchStore::RecentCharges> SqliteBranchStore::GetRecentCharges(
    std::string_view branch_id, int limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RecentCharges out;
  {
    ResetOnExit reset(recent_charges_);
    recent_charges_.Bind(1, branch_id);
    recent_charges_.Bind(2, static_cast<int64_t>(limit));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, recent_charges_.Step());
      if (!row) break;
      folding::ChargeRow c;
      c.branch_id = std::string(branch_id);
      c.at_ms = recent_charges_.Int(0);
      c.kind = recent_charges_.Text(1);
      c.label = recent_charges_.Text(2);
      c.excerpt = recent_charges_.Text(3);
      c.tokens = recent_charges_.Int(4);
      out.rows.push_back(std::move(c));
    }
  }
  std::reverse(out.rows.begin(), out.rows.end());
  ResetOnExit reset(count_charges_);
  count_charges_.Bind(1, branch_id);
  ASSIGN_OR_RETURN(bool row, count_charges_.Step());
  out.total = row ? count_charges_.Int(0) : 0;
  return out;
}

}  // namespace contextd::store
