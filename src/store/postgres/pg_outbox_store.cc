#include "store/postgres/pg_outbox_store.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::store {

absl::Status PgInsertOutboxRow(PgConn& c, const folding::OutboxEvent& e, const std::string& owner) {
  auto r = c.Exec(
      "INSERT INTO event_outbox (id, type, subject, payload, created_ms, owner, lease_until_ms) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7)",
      {e.id, e.type, e.subject, e.payload, e.created_ms, owner, e.lease_until_ms});
  if (!r.ok()) {
    return absl::Status(r.status().code(),
                        absl::StrCat("outbox event ", e.id, ": ", r.status().message()));
  }
  return absl::OkStatus();
}

std::unique_ptr<PgOutboxStore> PgOutboxStore::Create(std::shared_ptr<PgDatabase> db,
                                                     std::string owner) {
  return std::unique_ptr<PgOutboxStore>(new PgOutboxStore(std::move(db), std::move(owner)));
}

absl::Status PgOutboxStore::Append(const std::vector<folding::OutboxEvent>& events) {
  if (events.empty()) return absl::OkStatus();
  return db_->Write([&](PgConn& c) -> absl::Status {
    for (const folding::OutboxEvent& e : events) RETURN_IF_ERROR(PgInsertOutboxRow(c, e, owner_));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<folding::OutboxRow>> PgOutboxStore::ListOwn(int64_t after_seq,
                                                                       int limit) {
  std::vector<folding::OutboxRow> out;
  absl::Status read = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec("SELECT seq, id, type, subject, payload, created_ms, lease_until_ms "
                            "FROM event_outbox WHERE owner = $1 AND seq > $2 ORDER BY seq "
                            "LIMIT $3",
                            {owner_, after_seq, static_cast<int64_t>(limit)}));
    for (int i = 0; i < r.rows(); ++i) {
      folding::OutboxRow row;
      row.seq = r.Int(i, 0);
      row.event.id = r.Text(i, 1);
      row.event.type = r.Text(i, 2);
      row.event.subject = r.Text(i, 3);
      row.event.payload = r.Text(i, 4);
      row.event.created_ms = r.Int(i, 5);
      row.event.lease_until_ms = r.Int(i, 6);
      out.push_back(std::move(row));
    }
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  return out;
}

absl::Status PgOutboxStore::Remove(const std::vector<int64_t>& seqs) {
  if (seqs.empty()) return absl::OkStatus();
  std::string list = "{";
  for (size_t i = 0; i < seqs.size(); ++i) absl::StrAppend(&list, i > 0 ? "," : "", seqs[i]);
  list += "}";
  return db_->Write([&](PgConn& c) -> absl::Status {
    return c.Exec("DELETE FROM event_outbox WHERE seq = ANY($1::bigint[])", {list}).status();
  });
}

absl::StatusOr<int64_t> PgOutboxStore::TakeOver(int64_t now_ms, int64_t lease_ms, int limit) {
  int64_t taken = 0;
  absl::Status written = db_->Write([&](PgConn& c) -> absl::Status {
    // Alive: keep this instance's rows (NATS may be down for a while) from being taken over.
    RETURN_IF_ERROR(c.Exec("UPDATE event_outbox SET lease_until_ms = $2::bigint + $3::bigint WHERE "
                           "owner = $1 AND lease_until_ms < $2::bigint + $3::bigint / 2",
                           {owner_, now_ms, lease_ms})
                        .status());
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec(
            "WITH c AS (SELECT seq FROM event_outbox WHERE owner <> $1 AND lease_until_ms <= "
            "$2::bigint "
            "ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED) "
            "UPDATE event_outbox o SET owner = $1, lease_until_ms = $2::bigint + $3::bigint FROM c "
            "WHERE o.seq = c.seq",
            {owner_, now_ms, lease_ms, static_cast<int64_t>(limit)}));
    taken = r.affected();
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return taken;
}

absl::StatusOr<int64_t> PgOutboxStore::Trim(int64_t created_before_ms, int64_t max_rows) {
  int64_t deleted = 0;
  absl::Status written = db_->Write([&](PgConn& c) -> absl::Status {
    deleted = 0;
    ASSIGN_OR_RETURN(PgResult old,
                     c.Exec("DELETE FROM event_outbox WHERE created_ms < $1", {created_before_ms}));
    deleted += old.affected();
    ASSIGN_OR_RETURN(PgResult over,
                     c.Exec("DELETE FROM event_outbox WHERE seq <= (SELECT seq FROM event_outbox "
                            "ORDER BY seq DESC LIMIT 1 OFFSET $1)",
                            {max_rows}));
    deleted += over.affected();
    return absl::OkStatus();
  });
  if (!written.ok()) return written;
  return deleted;
}

absl::StatusOr<folding::OutboxStats> PgOutboxStore::Stats() {
  folding::OutboxStats out;
  absl::Status read = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT COUNT(*), (SELECT created_ms FROM event_outbox "
                                        "ORDER BY seq LIMIT 1) FROM event_outbox"));
    out.rows = r.Int(0, 0);
    out.oldest_created_ms = r.IsNull(0, 1) ? 0 : r.Int(0, 1);
    return absl::OkStatus();
  });
  if (!read.ok()) return read;
  return out;
}

}  // namespace contextd::store
