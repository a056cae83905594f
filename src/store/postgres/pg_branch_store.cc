#include "store/postgres/pg_branch_store.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/postgres/pg_outbox_store.h"

namespace contextd::store {
namespace {

using folding::Branch;

// Inserted and read; reads append `version` (column 18), which only updates set.
constexpr char kBranchColumns[] =
    "id, tenant, project, session_id, parent_id, depth, description, prompt, status, "
    "budget_allocated, tokens_used, reserved_for_children, deadline_ms, created_at_ms, "
    "finished_at_ms, summary, finish_reason, memory_queued";

PgParam NullIfZero(int64_t v) { return v == 0 ? PgParam::Null() : PgParam(v); }

}  // namespace

absl::StatusOr<std::unique_ptr<PgBranchStore>> PgBranchStore::Open(const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

PgBranchStore::PgBranchStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {
  // Unique enough to tell instances (and store objects) apart in a lease; not a secret.
  std::random_device rd;
  owner_ =
      absl::StrCat("inst_", absl::Hex(rd(), absl::kZeroPad8), absl::Hex(rd(), absl::kZeroPad8));
}

std::unique_ptr<PgBranchStore> PgBranchStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgBranchStore>(new PgBranchStore(std::move(db)));
}

std::unique_ptr<PgBranchStore> PgBranchStore::Create(std::shared_ptr<PgDatabase> db,
                                                     std::string owner) {
  std::unique_ptr<PgBranchStore> store(new PgBranchStore(std::move(db)));
  store->owner_ = std::move(owner);
  return store;
}

absl::Status PgBranchStore::Commit(const folding::BranchWrite& write) {
  if (write.empty()) return absl::OkStatus();
  return db_->Write([&](PgConn& c) { return CommitIn(c, write, owner_); });
}

absl::Status PgBranchStore::CommitIn(PgConn& c, const folding::BranchWrite& write,
                                     const std::string& owner) {
  static const std::string kInsert =
      absl::StrCat("INSERT INTO branches (", kBranchColumns,
                   ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)");
  for (const Branch& b : write.inserts) {
    auto r = c.Exec(
        kInsert, {b.id, b.session.tenant, b.session.project, b.session.session_id,
                  b.parent_id.empty() ? PgParam::Null() : PgParam(b.parent_id), b.depth,
                  b.description, b.prompt, folding::BranchStatusName(b.status), b.budget_allocated,
                  b.tokens_used, b.reserved_for_children, b.deadline_wall_ms, b.created_at_ms,
                  NullIfZero(b.finished_at_ms), b.summary, b.finish_reason, b.memory_queued});
    if (!r.ok()) {
      return absl::Status(r.status().code(),
                          absl::StrCat("insert branch ", b.id, ": ", r.status().message()));
    }
    for (size_t i = 0; i < b.injected_context.size(); ++i) {
      const folding::InjectedContext& ic = b.injected_context[i];
      RETURN_IF_ERROR(c.Exec("INSERT INTO branch_injections (branch_id, ord, kind, ref, text, "
                             "tokens) VALUES ($1,$2,$3,$4,$5,$6)",
                             {b.id, static_cast<int64_t>(i), ic.kind, ic.ref, ic.text, ic.tokens})
                          .status());
    }
  }
  for (const folding::BranchUpdate& u : write.updates) {
    // Conditional on the version the engine computed the update from (decision 0025): an
    // instance whose cache is stale writes nothing and reloads.
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("UPDATE branches SET status = $1, tokens_used = $2, "
               "reserved_for_children = $3, summary = $4, finish_reason = $5, "
               "finished_at_ms = $6, memory_queued = $7, version = version + 1 WHERE id = $8 "
               "AND ($9::bigint < 0 OR version = $9::bigint)",
               {folding::BranchStatusName(u.status), u.tokens_used, u.reserved_for_children,
                u.summary, u.finish_reason, NullIfZero(u.finished_at_ms), u.memory_queued, u.id,
                u.expected_version}));
    if (r.affected() != 1) {
      ASSIGN_OR_RETURN(PgResult known, c.Exec("SELECT 1 FROM branches WHERE id = $1", {u.id}));
      if (known.rows() == 0) {
        return absl::NotFoundError(absl::StrCat("update of unknown branch ", u.id));
      }
      return absl::AbortedError(
          absl::StrCat("branch ", u.id, " was changed by another instance; reload and retry"));
    }
  }
  for (const folding::ChargeRow& ch : write.charges) {
    auto r = c.Exec(
        "INSERT INTO branch_charges (branch_id, at_ms, kind, label, excerpt, tokens) "
        "VALUES ($1,$2,$3,$4,$5,$6)",
        {ch.branch_id, ch.at_ms, ch.kind, ch.label, ch.excerpt, ch.tokens});
    if (!r.ok()) {
      return absl::Status(r.status().code(), absl::StrCat("charge to branch ", ch.branch_id, ": ",
                                                          r.status().message()));
    }
  }
  // The events of this change, in its transaction (decision 0027).
  for (const folding::OutboxEvent& e : write.events)
    RETURN_IF_ERROR(PgInsertOutboxRow(c, e, owner));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Branch>> PgBranchStore::ReadBranches(PgConn& c, const PgResult& r) {
  std::vector<Branch> out;
  for (int i = 0; i < r.rows(); ++i) {
    ASSIGN_OR_RETURN(Branch b, BranchFromRow(PgRow(r, i)));
    b.version = r.Int(i, 18);
    out.push_back(std::move(b));
  }
  for (Branch& b : out) {
    ASSIGN_OR_RETURN(PgResult inj, c.Exec("SELECT kind, ref, text, tokens FROM branch_injections "
                                          "WHERE branch_id = $1 ORDER BY ord",
                                          {b.id}));
    for (int i = 0; i < inj.rows(); ++i) {
      b.injected_context.push_back(InjectionFromRow(PgRow(inj, i)));
    }
  }
  return out;
}

absl::StatusOr<std::optional<Branch>> PgBranchStore::Get(std::string_view id) {
  std::optional<Branch> out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", kBranchColumns,
                                                     ", version FROM branches WHERE id = $1"),
                                        {id}));
    ASSIGN_OR_RETURN(std::vector<Branch> rows, ReadBranches(c, r));
    out.reset();
    if (!rows.empty()) out = std::move(rows.front());
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<int64_t> PgBranchStore::SessionStamp(const folding::SessionKey& session) {
  int64_t stamp = 0;
  const absl::Status read = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT COUNT(*) + COALESCE(SUM(version), 0) FROM branches "
                                        "WHERE tenant = $1 AND project = $2 AND session_id = $3",
                                        {session.tenant, session.project, session.session_id}));
    stamp = r.Int(0, 0);
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  return stamp;
}

absl::StatusOr<std::vector<Branch>> PgBranchStore::ListSession(const folding::SessionKey& session) {
  std::vector<Branch> out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec(absl::StrCat("SELECT ", kBranchColumns, ", version",
                                         " FROM branches WHERE tenant = $1 AND project = $2 AND "
                                         "session_id = $3 ORDER BY pos"),
                            {session.tenant, session.project, session.session_id}));
    ASSIGN_OR_RETURN(out, ReadBranches(c, r));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<Branch>> PgBranchStore::ListLive() {
  std::vector<Branch> out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", kBranchColumns, ", version",
                                                     " FROM branches WHERE status IN "
                                                     "('created', 'active') ORDER BY pos")));
    ASSIGN_OR_RETURN(out, ReadBranches(c, r));
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<folding::BranchStore::RecentCharges> PgBranchStore::GetRecentCharges(
    std::string_view branch_id, int limit) {
  RecentCharges out;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    out = RecentCharges();
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec("SELECT at_ms, kind, label, excerpt, tokens, "
                            "(SELECT COUNT(*) FROM branch_charges WHERE branch_id = $1) "
                            "FROM branch_charges WHERE branch_id = $1 ORDER BY seq DESC LIMIT $2",
                            {branch_id, static_cast<int64_t>(limit)}));
    for (int i = 0; i < r.rows(); ++i) {
      folding::ChargeRow ch;
      ch.branch_id = std::string(branch_id);
      ch.at_ms = r.Int(i, 0);
      ch.kind = r.Text(i, 1);
      ch.label = r.Text(i, 2);
      ch.excerpt = r.Text(i, 3);
      ch.tokens = r.Int(i, 4);
      out.total = r.Int(i, 5);
      out.rows.push_back(std::move(ch));
    }
    if (r.rows() == 0 && limit <= 0) {
      ASSIGN_OR_RETURN(PgResult n, c.Exec("SELECT COUNT(*) FROM branch_charges WHERE branch_id "
                                          "= $1",
                                          {branch_id}));
      out.total = n.Int(0, 0);
    }
    std::reverse(out.rows.begin(), out.rows.end());
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<folding::DeadlineClaim> PgBranchStore::ClaimDeadline(std::string_view id,
                                                                    int64_t now_ms,
                                                                    int64_t lease_ms) {
  folding::DeadlineClaim claim = folding::DeadlineClaim::kEnded;
  absl::Status st = db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("WITH c AS (SELECT id FROM branches WHERE id = $1 AND status IN ('created', "
               "'active') AND (deadline_lease_ms <= $2 OR deadline_owner = $4) "
               "FOR UPDATE SKIP LOCKED) "
               "UPDATE branches b SET deadline_owner = $4, deadline_lease_ms = $2 + $3 "
               "FROM c WHERE b.id = c.id RETURNING b.id",
               {id, now_ms, lease_ms, owner_}));
    if (r.rows() == 1) {
      claim = folding::DeadlineClaim::kClaimed;
      return absl::OkStatus();
    }
    // Not taken: still live (another holds it, or it is locked right now) or ended.
    ASSIGN_OR_RETURN(PgResult live, c.Exec("SELECT 1 FROM branches WHERE id = $1 AND status IN "
                                           "('created', 'active')",
                                           {id}));
    claim =
        live.rows() > 0 ? folding::DeadlineClaim::kHeldElsewhere : folding::DeadlineClaim::kEnded;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return claim;
}

absl::StatusOr<std::vector<folding::SessionKey>> PgBranchStore::ListDueSessions(
    int64_t due_before_ms, int64_t now_ms, int limit) {
  std::vector<folding::SessionKey> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("SELECT tenant, project, session_id FROM branches WHERE status IN ('created', "
               "'active') AND deadline_ms <= $1 AND deadline_lease_ms <= $2 "
               "GROUP BY tenant, project, session_id ORDER BY MIN(deadline_ms) LIMIT $3",
               {due_before_ms, now_ms, static_cast<int64_t>(limit)}));
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(folding::SessionKey{r.Text(i, 0), r.Text(i, 1), r.Text(i, 2)});
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace contextd::store
