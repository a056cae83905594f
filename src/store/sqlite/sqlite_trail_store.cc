#include "store/sqlite/sqlite_trail_store.h"

#include <sqlite3.h>

#include <cctype>

#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "trail/content_hash.h"

namespace contextd::store {
namespace {

using trail::Event;
using trail::Scope;
using trail::ScopeKind;
using trail::ScopeStatus;

// Columns 0..13 of a scope read (store/rows.h); `s` is trail_scopes.
constexpr const char* kScopeColumns = kTrailScopeColumns;
constexpr int kScopeColumnCount = kTrailScopeColumnCount;

// Columns 0..8 of an event read (store/rows.h), with the FROM clause.
constexpr const char* kEventColumns = kTrailEventColumns;

Scope ReadScope(const Statement& st) { return ScopeFromRow(SqliteRow(st)); }

}  // namespace

absl::StatusOr<std::string> FtsQuery(std::string_view query) {
  if (query.size() > 1000) {
    return absl::InvalidArgumentError("search query too long (at most 1000 bytes)");
  }
  std::string out;
  size_t i = 0;
  while (i < query.size()) {
    while (i < query.size() && std::isspace(static_cast<unsigned char>(query[i]))) ++i;
    size_t start = i;
    while (i < query.size() && !std::isspace(static_cast<unsigned char>(query[i]))) ++i;
    std::string_view word = query.substr(start, i - start);
    if (word.empty()) continue;
    bool prefix = word.size() > 1 && word.back() == '*';
    if (prefix) word.remove_suffix(1);
    // Only words with a letter or digit can match anything (the tokenizer drops punctuation).
    bool has_alnum = false;
    for (char c : word) {
      if (std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80)) {
        has_alnum = true;
      }
    }
    if (!has_alnum) continue;
    if (!out.empty()) out += " OR ";
    out += '"';
    for (char c : word) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
    if (prefix) out += '*';
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "search query holds no word to look for (give one or more words; a trailing * matches a "
        "prefix)");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<SqliteTrailStore>> SqliteTrailStore::Open(
    const std::string& path, const DatabaseOptions& options,
    const SearchIndexOptions& search_options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  return Create(std::shared_ptr<Database>(std::move(db)), search_options);
}

absl::StatusOr<std::unique_ptr<SqliteTrailStore>> SqliteTrailStore::Create(
    std::shared_ptr<Database> db, const SearchIndexOptions& search_options) {
  const std::string path = db->path();
  if (path == ":memory:") {
    // The search index is another connection's file beside the database's, and an in-memory
    // database is seen by its own connection only.
    return absl::InvalidArgumentError(
        "the trail store needs a database file, not \":memory:\" (its search index is a file "
        "beside it)");
  }
  std::unique_ptr<SqliteTrailStore> store(new SqliteTrailStore(std::move(db)));
  RETURN_IF_ERROR(store->PrepareAll());
  ASSIGN_OR_RETURN(
      store->index_,
      SearchIndex::Open(path,
                        base::StrCat("SELECT ", kScopeColumns,
                                     ", snippet(trail_fts, -1, '[', ']', '...', 16) FROM "
                                     "search.trail_fts JOIN main.trail_scopes s ON s.pos = "
                                     "trail_fts.rowid WHERE trail_fts MATCH ?1 AND s.tenant = ?2 "
                                     "AND s.project = ?3 ORDER BY bm25(trail_fts) LIMIT ?4"),
                        search_options));
  return store;
}

absl::Status SqliteTrailStore::PrepareAll() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(insert_scope_,
                   db_->Prepare("INSERT INTO trail_scopes (id, tenant, project, session_id, kind, "
                                "parent_id, root_id, description, status, created_at_ms, "
                                "session_root) VALUES (?,?,?,?,?,?,?,?,'open',?,?)"));
  ASSIGN_OR_RETURN(find_root_,
                   db_->Prepare("SELECT id FROM trail_scopes WHERE tenant = ? AND project = ? AND "
                                "session_id = ? AND session_root = 1"));
  ASSIGN_OR_RETURN(log_fts_, db_->Prepare("INSERT INTO trail_fts_log (pos) VALUES (?)"));
  ASSIGN_OR_RETURN(trim_fts_log_, db_->Prepare("DELETE FROM trail_fts_log WHERE seq < ?"));
  ASSIGN_OR_RETURN(scope_root_,
                   db_->Prepare("SELECT root_id, status, pos FROM trail_scopes WHERE id = ?"));
  ASSIGN_OR_RETURN(insert_blob_,
                   db_->Prepare("INSERT OR IGNORE INTO trail_blobs (hash, size, content) VALUES "
                                "(?,?,?)"));
  ASSIGN_OR_RETURN(insert_event_,
                   db_->Prepare("INSERT INTO trail_events (scope_id, kind, label, blob_hash, "
                                "tokens, is_error, at_ms) VALUES (?,?,?,?,?,?,?)"));
  ASSIGN_OR_RETURN(fold_, db_->Prepare("UPDATE trail_scopes SET status = 'folded', summary = ?, "
                                       "summary_tokens = ?, folded_at_ms = ? WHERE pos = ?"));
  ASSIGN_OR_RETURN(get_scope_, db_->Prepare(base::StrCat("SELECT ", kScopeColumns,
                                                         " FROM trail_scopes s WHERE s.id = ?")));
  ASSIGN_OR_RETURN(list_events_,
                   db_->Prepare(base::StrCat("SELECT ", kEventColumns,
                                             " WHERE e.scope_id = ? ORDER BY e.seq LIMIT ? "
                                             "OFFSET ?")));
  ASSIGN_OR_RETURN(get_event_,
                   db_->Prepare(base::StrCat("SELECT ", kEventColumns, " WHERE e.seq = ?")));
  ASSIGN_OR_RETURN(previous_event_,
                   db_->Prepare(base::StrCat("SELECT ", kEventColumns,
                                             " WHERE e.scope_id = ? AND e.seq < ? ORDER BY e.seq "
                                             "DESC LIMIT 1")));
  ASSIGN_OR_RETURN(find_event_,
                   db_->Prepare(base::StrCat("SELECT ", kEventColumns,
                                             " JOIN trail_scopes s ON s.id = e.scope_id WHERE "
                                             "s.root_id = ?1 AND e.blob_hash = ?2 AND e.kind = "
                                             "?3 ORDER BY e.seq DESC LIMIT 1")));
  ASSIGN_OR_RETURN(count_events_,
                   db_->Prepare("SELECT COUNT(*) FROM trail_events WHERE scope_id = ?"));
  ASSIGN_OR_RETURN(
      list_sessions_,
      db_->Prepare("SELECT s.id, s.tenant, s.project, s.session_id, s.created_at_ms, "
                   "(SELECT COUNT(*) FROM trail_scopes c WHERE c.root_id = s.id), "
                   "(SELECT COALESCE(SUM(e.tokens), 0) FROM trail_events e JOIN trail_scopes c "
                   "ON c.id = e.scope_id WHERE c.root_id = s.id) "
                   "FROM trail_scopes s WHERE s.kind = 'session' AND (?1 = '' OR s.tenant = ?1) "
                   "ORDER BY s.rowid DESC LIMIT ?2"));
  ASSIGN_OR_RETURN(list_scopes_,
                   db_->Prepare(base::StrCat("SELECT ", kScopeColumns,
                                             " FROM trail_scopes s WHERE s.root_id = ? ORDER BY "
                                             "s.rowid")));
  ASSIGN_OR_RETURN(list_open_,
                   db_->Prepare(base::StrCat("SELECT ", kScopeColumns,
                                             " FROM trail_scopes s WHERE s.status = 'open' AND "
                                             "s.kind = ? ORDER BY s.rowid LIMIT ?")));
  ASSIGN_OR_RETURN(list_open_of_,
                   db_->Prepare(base::StrCat("SELECT ", kScopeColumns,
                                             " FROM trail_scopes s WHERE s.status = 'open' AND "
                                             "s.kind = ? AND s.root_id = ? ORDER BY s.pos")));
  ASSIGN_OR_RETURN(blob_count_, db_->Prepare("SELECT COUNT(*) FROM trail_blobs"));
  return absl::OkStatus();
}

absl::Status SqliteTrailStore::LogForSearchLocked(int64_t pos) {
  {
    ResetOnExit reset(log_fts_);
    log_fts_.Bind(1, pos);
    RETURN_IF_ERROR(log_fts_.Run());
  }
  const int64_t seq = db_->LastInsertRowid();
  index_->Noted(seq);
  if (++logged_since_trim_ < kFtsLogTrimEvery) return absl::OkStatus();
  logged_since_trim_ = 0;
  // Entries the index file holds; the last one indexed stays, so that the log never empties and
  // numbers on from where it was. A failed trim fails no write: the next one retries.
  ResetOnExit reset(trim_fts_log_);
  trim_fts_log_.Bind(1, index_->indexed_seq());
  if (absl::Status trimmed = trim_fts_log_.Run(); !trimmed.ok()) {
    base::LogWarn(base::StrCat("trail_fts_log not trimmed: ", trimmed.message()));
  }
  return absl::OkStatus();
}

template <typename Fn>
absl::Status SqliteTrailStore::InTransaction(Fn fn) {
  RETURN_IF_ERROR(db_->BeginWrite());
  return db_->EndWrite(fn());
}

absl::Status SqliteTrailStore::OpenScopeLocked(const Scope& scope, bool session_root) {
  std::string root_id = scope.id;
  if (!scope.parent_id.empty()) {
    ResetOnExit reset(scope_root_);
    scope_root_.Bind(1, scope.parent_id);
    ASSIGN_OR_RETURN(bool found, scope_root_.Step());
    if (!found) {
      return absl::NotFoundError(base::StrCat("parent scope ", scope.parent_id, " not found"));
    }
    root_id = scope_root_.Text(0);
  }
  {
    ResetOnExit reset(insert_scope_);
    insert_scope_.Bind(1, scope.id);
    insert_scope_.Bind(2, scope.session.tenant);
    insert_scope_.Bind(3, scope.session.project);
    insert_scope_.Bind(4, scope.session.session_id);
    insert_scope_.Bind(5, std::string_view(trail::ScopeKindName(scope.kind)));
    if (scope.parent_id.empty()) {
      insert_scope_.BindNull(6);
    } else {
      insert_scope_.Bind(6, scope.parent_id);
    }
    insert_scope_.Bind(7, root_id);
    insert_scope_.Bind(8, scope.description);
    insert_scope_.Bind(9, scope.created_at_ms);
    insert_scope_.Bind(10, static_cast<int64_t>(session_root ? 1 : 0));
    absl::Status st = insert_scope_.Run();
    if (st.code() == absl::StatusCode::kAlreadyExists) {
      return absl::AlreadyExistsError(base::StrCat("scope ", scope.id, " already exists"));
    }
    RETURN_IF_ERROR(st);
  }
  // pos is the rowid. (RETURNING would cost more than the insert: SQLite collects returned
  // rows in an ephemeral table.)
  return LogForSearchLocked(db_->LastInsertRowid());
}

std::vector<std::string> SqliteTrailStore::HashPayloads(
    const std::vector<trail::NewEvent>& events) {
  std::vector<std::string> hashes;
  hashes.reserve(events.size());
  for (const auto& e : events) hashes.push_back(trail::ContentHash(e.payload));
  return hashes;
}

absl::Status SqliteTrailStore::AppendEventsLocked(const std::vector<trail::NewEvent>& events,
                                                  const std::vector<std::string>& hashes,
                                                  std::vector<int64_t>* seqs) {
  for (size_t i = 0; i < events.size(); ++i) {
    const trail::NewEvent& e = events[i];
    {
      ResetOnExit reset(insert_blob_);
      insert_blob_.Bind(1, hashes[i]);
      insert_blob_.Bind(2, static_cast<int64_t>(e.payload.size()));
      insert_blob_.Bind(3, e.payload);
      RETURN_IF_ERROR(insert_blob_.Run());
    }
    ResetOnExit reset(insert_event_);
    insert_event_.Bind(1, e.scope_id);
    insert_event_.Bind(2, std::string_view(trail::EventKindName(e.kind)));
    insert_event_.Bind(3, e.label);
    insert_event_.Bind(4, hashes[i]);
    insert_event_.Bind(5, e.tokens);
    insert_event_.Bind(6, static_cast<int64_t>(e.is_error ? 1 : 0));
    insert_event_.Bind(7, e.at_ms);
    absl::Status inserted = insert_event_.Run();
    // The scope's existence is checked by the foreign key (its lookup is the one a SELECT
    // beforehand would make); the blob was inserted just above.
    if (!inserted.ok() && db_->LastErrorCode() == SQLITE_CONSTRAINT_FOREIGNKEY) {
      return absl::NotFoundError(base::StrCat("scope ", e.scope_id, " not found"));
    }
    RETURN_IF_ERROR(inserted);
    if (seqs != nullptr) seqs->push_back(db_->LastInsertRowid());  // seq is the rowid
  }
  return absl::OkStatus();
}

absl::Status SqliteTrailStore::FoldScopeLocked(std::string_view id, std::string_view summary,
                                               int64_t summary_tokens, int64_t at_ms) {
  int64_t pos = 0;
  {
    ResetOnExit reset(scope_root_);
    scope_root_.Bind(1, id);
    ASSIGN_OR_RETURN(bool found, scope_root_.Step());
    if (!found) return absl::NotFoundError(base::StrCat("scope ", id, " not found"));
    if (scope_root_.Text(1) == "folded") {
      return absl::FailedPreconditionError(base::StrCat("scope ", id, " is already folded"));
    }
    pos = scope_root_.Int(2);
  }
  {
    ResetOnExit reset(fold_);
    fold_.Bind(1, summary);
    fold_.Bind(2, summary_tokens);
    fold_.Bind(3, at_ms);
    fold_.Bind(4, pos);
    RETURN_IF_ERROR(fold_.Run());
  }
  return LogForSearchLocked(pos);
}

absl::Status SqliteTrailStore::OpenScope(const Scope& scope) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  return InTransaction([&] { return OpenScopeLocked(scope, false); });
}

absl::StatusOr<std::string> SqliteTrailStore::OpenSessionRoot(const Scope& root) {
  if (root.kind != ScopeKind::kSession || !root.parent_id.empty()) {
    return absl::InvalidArgumentError(
        base::StrCat("scope ", root.id, " is not a session root (a session scope, no parent)"));
  }
  std::string id;
  std::lock_guard<std::mutex> lock(db_->mutex());
  // The lookup and the insert share one write transaction: SQLite has one writer at a time, so
  // no other process can insert the session's root between them.
  absl::Status st = InTransaction([&]() -> absl::Status {
    {
      ResetOnExit reset(find_root_);
      find_root_.Bind(1, root.session.tenant);
      find_root_.Bind(2, root.session.project);
      find_root_.Bind(3, root.session.session_id);
      ASSIGN_OR_RETURN(bool found, find_root_.Step());
      if (found) {
        id = find_root_.Text(0);
        return absl::OkStatus();
      }
    }
    RETURN_IF_ERROR(OpenScopeLocked(root, true));
    id = root.id;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return id;
}

absl::Status SqliteTrailStore::OpenScopeWithEvents(const Scope& scope,
                                                   const std::vector<trail::NewEvent>& events) {
  // Hash outside the lock: it is the only costly part for large payloads.
  std::vector<std::string> hashes = HashPayloads(events);
  std::lock_guard<std::mutex> lock(db_->mutex());
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(OpenScopeLocked(scope, false));
    return AppendEventsLocked(events, hashes, nullptr);
  });
}

absl::StatusOr<std::vector<int64_t>> SqliteTrailStore::AppendEvents(
    const std::vector<trail::NewEvent>& events) {
  std::vector<std::string> hashes = HashPayloads(events);
  std::vector<int64_t> seqs;
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(InTransaction([&] { return AppendEventsLocked(events, hashes, &seqs); }));
  return seqs;
}

absl::Status SqliteTrailStore::FoldScope(std::string_view id, std::string_view summary,
                                         int64_t summary_tokens, int64_t at_ms) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  return InTransaction([&] { return FoldScopeLocked(id, summary, summary_tokens, at_ms); });
}

absl::Status SqliteTrailStore::FoldScopeAfterEvents(const std::vector<trail::NewEvent>& events,
                                                    std::string_view id, std::string_view summary,
                                                    int64_t summary_tokens, int64_t at_ms) {
  std::vector<std::string> hashes = HashPayloads(events);
  std::lock_guard<std::mutex> lock(db_->mutex());
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(AppendEventsLocked(events, hashes, nullptr));
    return FoldScopeLocked(id, summary, summary_tokens, at_ms);
  });
}

absl::StatusOr<std::optional<Scope>> SqliteTrailStore::GetScope(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  return GetScopeLocked(id);
}

absl::StatusOr<std::optional<Scope>> SqliteTrailStore::GetScopeLocked(std::string_view id) {
  ResetOnExit reset(get_scope_);
  get_scope_.Bind(1, id);
  ASSIGN_OR_RETURN(bool found, get_scope_.Step());
  if (!found) return std::optional<Scope>();
  return std::optional<Scope>(ReadScope(get_scope_));
}

absl::StatusOr<trail::EventPage> SqliteTrailStore::ListEvents(std::string_view scope_id,
                                                              int64_t offset, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  trail::EventPage page;
  {
    ResetOnExit reset(list_events_);
    list_events_.Bind(1, scope_id);
    list_events_.Bind(2, limit);
    list_events_.Bind(3, offset);
    while (true) {
      ASSIGN_OR_RETURN(bool row, list_events_.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(Event e, ReadEvent(list_events_));
      page.events.push_back(std::move(e));
    }
  }
  ResetOnExit reset(count_events_);
  count_events_.Bind(1, scope_id);
  ASSIGN_OR_RETURN(bool row, count_events_.Step());
  page.total = row ? count_events_.Int(0) : 0;
  return page;
}

absl::StatusOr<Event> SqliteTrailStore::ReadEvent(Statement& st) {
  return EventFromRow(SqliteRow(st));
}

absl::StatusOr<std::optional<Event>> SqliteTrailStore::GetEvent(int64_t seq) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(get_event_);
  get_event_.Bind(1, seq);
  ASSIGN_OR_RETURN(bool row, get_event_.Step());
  if (!row) return std::optional<Event>();
  ASSIGN_OR_RETURN(Event e, ReadEvent(get_event_));
  return std::optional<Event>(std::move(e));
}

absl::StatusOr<std::optional<Event>> SqliteTrailStore::PreviousEvent(std::string_view scope_id,
                                                                     int64_t seq) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(previous_event_);
  previous_event_.Bind(1, scope_id);
  previous_event_.Bind(2, seq);
  ASSIGN_OR_RETURN(bool row, previous_event_.Step());
  if (!row) return std::optional<Event>();
  ASSIGN_OR_RETURN(Event e, ReadEvent(previous_event_));
  return std::optional<Event>(std::move(e));
}

absl::StatusOr<std::optional<Event>> SqliteTrailStore::FindEvent(std::string_view root_scope_id,
                                                                 std::string_view payload_hash,
                                                                 trail::EventKind kind) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(find_event_);
  find_event_.Bind(1, root_scope_id);
  find_event_.Bind(2, payload_hash);
  find_event_.Bind(3, std::string_view(trail::EventKindName(kind)));
  ASSIGN_OR_RETURN(bool row, find_event_.Step());
  if (!row) return std::optional<Event>();
  ASSIGN_OR_RETURN(Event e, ReadEvent(find_event_));
  return std::optional<Event>(std::move(e));
}

absl::StatusOr<std::vector<trail::SessionEntry>> SqliteTrailStore::ListSessions(
    std::string_view tenant, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(list_sessions_);
  list_sessions_.Bind(1, tenant);
  list_sessions_.Bind(2, limit);
  std::vector<trail::SessionEntry> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, list_sessions_.Step());
    if (!row) break;
    trail::SessionEntry s;
    s.root_scope_id = list_sessions_.Text(0);
    s.session.tenant = list_sessions_.Text(1);
    s.session.project = list_sessions_.Text(2);
    s.session.session_id = list_sessions_.Text(3);
    s.created_at_ms = list_sessions_.Int(4);
    s.scope_count = list_sessions_.Int(5);
    s.event_tokens = list_sessions_.Int(6);
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<Scope>> SqliteTrailStore::ReadScopes(Statement& st, int extra_text_col,
                                                                std::vector<std::string>* extra) {
  std::vector<Scope> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadScope(st));
    if (extra != nullptr) extra->push_back(st.Text(extra_text_col));
  }
  return out;
}

absl::StatusOr<std::vector<Scope>> SqliteTrailStore::ListScopes(std::string_view root_scope_id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(list_scopes_);
  list_scopes_.Bind(1, root_scope_id);
  return ReadScopes(list_scopes_, 0, nullptr);
}

absl::StatusOr<std::vector<Scope>> SqliteTrailStore::ListOpenScopes(ScopeKind kind, int64_t limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(list_open_);
  list_open_.Bind(1, std::string_view(trail::ScopeKindName(kind)));
  list_open_.Bind(2, limit);
  return ReadScopes(list_open_, 0, nullptr);
}

absl::StatusOr<std::vector<Scope>> SqliteTrailStore::ListOpenScopesOf(
    std::string_view root_scope_id, ScopeKind kind) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(list_open_of_);
  list_open_of_.Bind(1, std::string_view(trail::ScopeKindName(kind)));
  list_open_of_.Bind(2, root_scope_id);
  return ReadScopes(list_open_of_, 0, nullptr);
}

absl::StatusOr<std::vector<trail::SearchHit>> SqliteTrailStore::Search(std::string_view tenant,
                                                                       std::string_view project,
                                                                       std::string_view query,
                                                                       int64_t limit) {
  ASSIGN_OR_RETURN(std::string match, FtsQuery(query));
  // On the index's own connection, not under the database's mutex: the engine's writes go on.
  std::vector<std::string> snippets;
  absl::StatusOr<std::vector<Scope>> scopes;
  RETURN_IF_ERROR(index_->Search(match, tenant, project, limit, [&](Statement& search) {
    scopes = ReadScopes(search, kScopeColumnCount, &snippets);
    return absl::OkStatus();
  }));
  if (!scopes.ok()) {
    // FtsQuery leaves no syntax to get wrong, but never let an FTS error look like a crash.
    return absl::InvalidArgumentError(
        base::StrCat("search query not understood: ", scopes.status().message()));
  }
  std::vector<trail::SearchHit> hits;
  for (size_t i = 0; i < scopes->size(); ++i) {
    hits.push_back(trail::SearchHit{std::move((*scopes)[i]), std::move(snippets[i])});
  }
  return hits;
}

absl::StatusOr<int64_t> SqliteTrailStore::BlobCount() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(blob_count_);
  ASSIGN_OR_RETURN(bool row, blob_count_.Step());
  return row ? blob_count_.Int(0) : 0;
}

}  // namespace contextd::store
