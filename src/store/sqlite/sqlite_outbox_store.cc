#include "store/sqlite/sqlite_outbox_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace contextd::store {

absl::Status InsertOutboxRow(Statement& insert, const folding::OutboxEvent& e,
                             std::string_view owner) {
  ResetOnExit reset(insert);
  insert.Bind(1, e.id);
  insert.Bind(2, e.type);
  insert.Bind(3, e.subject);
  insert.Bind(4, e.payload);
  insert.Bind(5, e.created_ms);
  insert.Bind(6, owner);
  insert.Bind(7, e.lease_until_ms);
  absl::Status st = insert.Run();
  if (!st.ok())
    return absl::Status(st.code(), absl::StrCat("outbox event ", e.id, ": ", st.message()));
  return st;
}

absl::StatusOr<std::unique_ptr<SqliteOutboxStore>> SqliteOutboxStore::Create(
    std::shared_ptr<Database> db) {
  DatabaseOptions options;
  options.background_checkpoint_ms = 0;  // the writer's connection checkpoints
  options.create_directories = false;
  ASSIGN_OR_RETURN(std::unique_ptr<Database> reader, Database::Open(db->path(), options));
  return std::unique_ptr<SqliteOutboxStore>(
      new SqliteOutboxStore(std::move(db), std::move(reader)));
}

absl::StatusOr<std::unique_ptr<SqliteOutboxStore>> SqliteOutboxStore::Open(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  return Create(std::shared_ptr<Database>(std::move(db)));
}

absl::Status SqliteOutboxStore::Append(const std::vector<folding::OutboxEvent>& events) {
  if (events.empty()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  auto body = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement insert, db_->Prepare(kSqliteInsertOutboxSql));
    for (const folding::OutboxEvent& e : events)
      RETURN_IF_ERROR(InsertOutboxRow(insert, e, owner_));
    return absl::OkStatus();
  };
  return db_->EndWrite(body());
}

absl::StatusOr<std::vector<folding::OutboxRow>> SqliteOutboxStore::ListOwn(int64_t after_seq,
                                                                           int limit) {
  std::vector<folding::OutboxRow> raw;
  {
    std::lock_guard<std::mutex> lock(reader_->mutex());
    ASSIGN_OR_RETURN(Statement st,
                     reader_->Prepare("SELECT seq, id, type, subject, payload, created_ms, "
                                      "lease_until_ms FROM event_outbox WHERE seq > ? "
                                      "ORDER BY seq LIMIT ?"));
    // Removed rows still visible are skipped: read past them, so a full page stays full.
    std::lock_guard<std::mutex> removed_lock(removed_mu_);
    st.Bind(1, after_seq);
    st.Bind(2, static_cast<int64_t>(limit) + static_cast<int64_t>(removed_.size()));
    while (true) {
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      folding::OutboxRow r;
      r.seq = st.Int(0);
      r.event.id = st.Text(1);
      r.event.type = st.Text(2);
      r.event.subject = st.Text(3);
      r.event.payload = st.Text(4);
      r.event.created_ms = st.Int(5);
      r.event.lease_until_ms = st.Int(6);
      raw.push_back(std::move(r));
    }
    st.Reset();
    // A removed seq this listing would have shown, and did not, is gone for good.
    const bool complete = raw.size() < static_cast<size_t>(limit) + removed_.size();
    for (auto it = removed_.lower_bound(after_seq + 1); it != removed_.end();) {
      const bool covered = complete || (!raw.empty() && *it < raw.back().seq);
      const bool seen = std::any_of(raw.begin(), raw.end(),
                                    [&](const folding::OutboxRow& r) { return r.seq == *it; });
      if (covered && !seen) {
        it = removed_.erase(it);
      } else {
        ++it;
      }
    }
    raw.erase(
        std::remove_if(raw.begin(), raw.end(),
                       [&](const folding::OutboxRow& r) { return removed_.count(r.seq) > 0; }),
        raw.end());
  }
  if (raw.size() > static_cast<size_t>(limit)) raw.resize(static_cast<size_t>(limit));
  return raw;
}

absl::Status SqliteOutboxStore::Remove(const std::vector<int64_t>& seqs) {
  if (seqs.empty()) return absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(db_->mutex());
    RETURN_IF_ERROR(db_->BeginWrite());
    auto body = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(Statement del, db_->Prepare("DELETE FROM event_outbox WHERE seq = ?"));
      for (int64_t seq : seqs) {
        ResetOnExit reset(del);
        del.Bind(1, seq);
        RETURN_IF_ERROR(del.Run());
      }
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(db_->EndWrite(body()));
  }
  std::lock_guard<std::mutex> removed_lock(removed_mu_);
  removed_.insert(seqs.begin(), seqs.end());
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteOutboxStore::TakeOver(int64_t, int64_t, int) { return 0; }

absl::StatusOr<int64_t> SqliteOutboxStore::Trim(int64_t created_before_ms, int64_t max_rows) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  int64_t deleted = 0;
  auto body = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Statement old, db_->Prepare("DELETE FROM event_outbox WHERE created_ms < ?"));
    old.Bind(1, created_before_ms);
    RETURN_IF_ERROR(old.Run());
    deleted += db_->Changes();
    // Beyond max_rows: the oldest go (seq order is write order).
    ASSIGN_OR_RETURN(Statement over,
                     db_->Prepare("DELETE FROM event_outbox WHERE seq <= (SELECT seq FROM "
                                  "event_outbox ORDER BY seq DESC LIMIT 1 OFFSET ?)"));
    over.Bind(1, max_rows);
    RETURN_IF_ERROR(over.Run());
    deleted += db_->Changes();
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(db_->EndWrite(body()));
  return deleted;
}

absl::StatusOr<folding::OutboxStats> SqliteOutboxStore::Stats() {
  std::lock_guard<std::mutex> lock(reader_->mutex());
  ASSIGN_OR_RETURN(Statement st,
                   reader_->Prepare("SELECT COUNT(*), (SELECT created_ms FROM event_outbox "
                                    "ORDER BY seq LIMIT 1) FROM event_outbox"));
  ResetOnExit reset(st);
  ASSIGN_OR_RETURN(bool row, st.Step());
  folding::OutboxStats out;
  if (row) {
    out.rows = st.Int(0);
    out.oldest_created_ms = st.IsNull(1) ? 0 : st.Int(1);
  }
  return out;
}

}  // namespace contextd::store
