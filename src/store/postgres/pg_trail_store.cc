#include "store/postgres/pg_trail_store.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
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

constexpr const char* kEventColumns = kTrailEventColumns;

Scope ReadScope(const PgResult& r, int i) { return ScopeFromRow(PgRow(r, i)); }

absl::StatusOr<Event> ReadEvent(const PgResult& r, int i) { return EventFromRow(PgRow(r, i)); }

std::vector<std::string> HashPayloads(const std::vector<trail::NewEvent>& events) {
  std::vector<std::string> hashes;
  hashes.reserve(events.size());
  for (const auto& e : events) hashes.push_back(trail::ContentHash(e.payload));
  return hashes;
}

bool IsSeparator(unsigned char c) { return std::isspace(c) || std::ispunct(c); }

}  // namespace

absl::StatusOr<std::string> PgTsQuery(std::string_view query) {
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
    std::string phrase;
    size_t j = 0;
    while (j < word.size()) {
      while (j < word.size() && IsSeparator(static_cast<unsigned char>(word[j]))) ++j;
      size_t part_start = j;
      while (j < word.size() && !IsSeparator(static_cast<unsigned char>(word[j]))) ++j;
      if (j == part_start) continue;
      if (!phrase.empty()) phrase += " <-> ";
      phrase += '\'';
      for (size_t k = part_start; k < j; ++k) {
        phrase += static_cast<char>(std::tolower(static_cast<unsigned char>(word[k])));
      }
      phrase += '\'';
    }
    if (phrase.empty()) continue;
    if (prefix) phrase += ":*";
    if (!out.empty()) out += " | ";
    bool is_phrase = phrase.find("<->") != std::string::npos;
    out += is_phrase ? "(" + phrase + ")" : phrase;
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "search query holds no word to look for (give one or more words; a trailing * matches a "
        "prefix)");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PgTrailStore>> PgTrailStore::Open(const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

std::unique_ptr<PgTrailStore> PgTrailStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgTrailStore>(new PgTrailStore(std::move(db)));
}

absl::Status PgTrailStore::OpenScopeIn(PgConn& c, const Scope& scope) {
  std::string root_id = scope.id;
  if (!scope.parent_id.empty()) {
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec("SELECT root_id FROM trail_scopes WHERE id = $1", {scope.parent_id}));
    if (r.rows() == 0) {
      return absl::NotFoundError(absl::StrCat("parent scope ", scope.parent_id, " not found"));
    }
    root_id = r.Text(0, 0);
  }
  auto r = c.Exec(
      "INSERT INTO trail_scopes (id, tenant, project, session_id, kind, parent_id, root_id, "
      "description, status, created_at_ms) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,'open',$9)",
      {scope.id, scope.session.tenant, scope.session.project, scope.session.session_id,
       trail::ScopeKindName(scope.kind),
       scope.parent_id.empty() ? PgParam::Null() : PgParam(scope.parent_id), root_id,
       scope.description, scope.created_at_ms});
  if (r.status().code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(absl::StrCat("scope ", scope.id, " already exists"));
  }
  return r.status();
}

absl::Status PgTrailStore::AppendEventsIn(PgConn& c, const std::vector<trail::NewEvent>& events,
                                          const std::vector<std::string>& hashes,
                                          std::vector<int64_t>* seqs) {
  for (size_t i = 0; i < events.size(); ++i) {
    const trail::NewEvent& e = events[i];
    RETURN_IF_ERROR(
        c.Exec("INSERT INTO trail_blobs (hash, size, content) VALUES ($1,$2,$3) "
               "ON CONFLICT (hash) DO NOTHING",
               {hashes[i], static_cast<int64_t>(e.payload.size()), PgParam::Bytes(e.payload)})
            .status());
    auto r = c.Exec(
        "INSERT INTO trail_events (scope_id, kind, label, blob_hash, tokens, "
        "is_error, at_ms) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING seq",
        {e.scope_id, trail::EventKindName(e.kind), e.label, hashes[i], e.tokens, e.is_error,
         e.at_ms});
    if (!r.ok() && c.last_sqlstate() == "23503") {
      return absl::NotFoundError(absl::StrCat("scope ", e.scope_id, " not found"));
    }
    RETURN_IF_ERROR(r.status());
    if (seqs != nullptr) seqs->push_back(r->Int(0, 0));
  }
  return absl::OkStatus();
}

absl::Status PgTrailStore::FoldScopeIn(PgConn& c, std::string_view id, std::string_view summary,
                                       int64_t summary_tokens, int64_t at_ms) {
  ASSIGN_OR_RETURN(PgResult r,
                   c.Exec("SELECT status FROM trail_scopes WHERE id = $1 FOR UPDATE", {id}));
  if (r.rows() == 0)
    return absl::NotFoundError(absl::StrCat("scope ", std::string(id), " not found"));
  if (r.Text(0, 0) == "folded") {
    return absl::FailedPreconditionError(
        absl::StrCat("scope ", std::string(id), " is already folded"));
  }
  return c
      .Exec(
          "UPDATE trail_scopes SET status = 'folded', summary = $1, summary_tokens = $2, "
          "folded_at_ms = $3 WHERE id = $4",
          {summary, summary_tokens, at_ms, id})
      .status();
}

absl::Status PgTrailStore::OpenScope(const Scope& scope) {
  return db_->Write([&](PgConn& c) { return OpenScopeIn(c, scope); });
}

absl::StatusOr<std::string> PgTrailStore::OpenSessionRoot(const Scope& root) {
  if (root.kind != ScopeKind::kSession || !root.parent_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scope ", root.id, " is not a session root (a session scope, no parent)"));
  }
  constexpr char kFind[] =
      "SELECT id FROM trail_scopes WHERE tenant = $1 AND project = $2 AND session_id = $3 AND "
      "session_root";
  const std::vector<PgParam> key = {root.session.tenant, root.session.project,
                                    root.session.session_id};
  std::string id;
  absl::Status st = db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult found, c.Exec(kFind, key));
    if (found.rows() > 0) {
      id = found.Text(0, 0);
      return absl::OkStatus();
    }
    // Another instance inserting the same session's root at once: the unique index makes this
    // insert wait for its transaction, then do nothing; the read after it (a statement of its
    // own, so a snapshot of its own under READ COMMITTED) sees the committed root.
    auto inserted = c.Exec(
        "INSERT INTO trail_scopes (id, tenant, project, session_id, kind, parent_id, root_id, "
        "description, status, created_at_ms, session_root) VALUES "
        "($1,$2,$3,$4,'session',NULL,$1,$5,'open',$6,true) "
        "ON CONFLICT (tenant, project, session_id) WHERE session_root DO NOTHING RETURNING id",
        {root.id, root.session.tenant, root.session.project, root.session.session_id,
         root.description, root.created_at_ms});
    if (inserted.status().code() == absl::StatusCode::kAlreadyExists) {
      return absl::AlreadyExistsError(absl::StrCat("scope ", root.id, " already exists"));
    }
    RETURN_IF_ERROR(inserted.status());
    if (inserted->rows() > 0) {
      id = root.id;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(PgResult winner, c.Exec(kFind, key));
    if (winner.rows() == 0) {
      return absl::UnavailableError(
          absl::StrCat("the root scope of session ", root.session.session_id,
                       " was being opened by another instance and is gone: retry"));
    }
    id = winner.Text(0, 0);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return id;
}

absl::Status PgTrailStore::OpenScopeWithEvents(const Scope& scope,
                                               const std::vector<trail::NewEvent>& events) {
  std::vector<std::string> hashes = HashPayloads(events);
  return db_->Write([&](PgConn& c) -> absl::Status {
    absl::Status opened = OpenScopeIn(c, scope);
    if (!opened.ok()) return opened;
    return AppendEventsIn(c, events, hashes, nullptr);
  });
}

absl::StatusOr<std::vector<int64_t>> PgTrailStore::AppendEvents(
    const std::vector<trail::NewEvent>& events) {
  std::vector<std::string> hashes = HashPayloads(events);
  std::vector<int64_t> seqs;
  absl::Status st = db_->Write([&](PgConn& c) {
    seqs.clear();
    return AppendEventsIn(c, events, hashes, &seqs);
  });
  if (!st.ok()) return st;
  return seqs;
}

absl::Status PgTrailStore::FoldScope(std::string_view id, std::string_view summary,
                                     int64_t summary_tokens, int64_t at_ms) {
  return db_->Write([&](PgConn& c) { return FoldScopeIn(c, id, summary, summary_tokens, at_ms); });
}

absl::Status PgTrailStore::FoldScopeAfterEvents(const std::vector<trail::NewEvent>& events,
                                                std::string_view id, std::string_view summary,
                                                int64_t summary_tokens, int64_t at_ms) {
  std::vector<std::string> hashes = HashPayloads(events);
  return db_->Write([&](PgConn& c) -> absl::Status {
    absl::Status appended = AppendEventsIn(c, events, hashes, nullptr);
    if (!appended.ok()) return appended;
    return FoldScopeIn(c, id, summary, summary_tokens, at_ms);
  });
}

absl::StatusOr<std::vector<Scope>> PgTrailStore::QueryScopes(std::string_view sql,
                                                             const std::vector<PgParam>& params) {
  std::vector<Scope> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r, c.Exec(sql, params));
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadScope(r, i));
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::optional<Event>> PgTrailStore::QueryEvent(std::string_view sql,
                                                              const std::vector<PgParam>& params) {
  std::optional<Event> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.reset();
    ASSIGN_OR_RETURN(PgResult r, c.Exec(sql, params));
    if (r.rows() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Event e, ReadEvent(r, 0));
    out = std::move(e);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::optional<Scope>> PgTrailStore::GetScope(std::string_view id) {
  ASSIGN_OR_RETURN(
      std::vector<Scope> rows,
      QueryScopes(absl::StrCat("SELECT ", kScopeColumns, " FROM trail_scopes s WHERE s.id = $1"),
                  {id}));
  if (rows.empty()) return std::optional<Scope>();
  return std::optional<Scope>(std::move(rows.front()));
}

absl::StatusOr<trail::EventPage> PgTrailStore::ListEvents(std::string_view scope_id, int64_t offset,
                                                          int64_t limit) {
  trail::EventPage page;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    page = trail::EventPage();
    ASSIGN_OR_RETURN(PgResult r, c.Exec(absl::StrCat("SELECT ", kEventColumns,
                                                     " WHERE e.scope_id = $1 ORDER BY e.seq "
                                                     "LIMIT $2 OFFSET $3"),
                                        {scope_id, limit, offset}));
    for (int i = 0; i < r.rows(); ++i) {
      ASSIGN_OR_RETURN(Event e, ReadEvent(r, i));
      page.events.push_back(std::move(e));
    }
    ASSIGN_OR_RETURN(PgResult n,
                     c.Exec("SELECT COUNT(*) FROM trail_events WHERE scope_id = $1", {scope_id}));
    page.total = n.Int(0, 0);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return page;
}

absl::StatusOr<std::optional<Event>> PgTrailStore::GetEvent(int64_t seq) {
  return QueryEvent(absl::StrCat("SELECT ", kEventColumns, " WHERE e.seq = $1"), {seq});
}

absl::StatusOr<std::optional<Event>> PgTrailStore::PreviousEvent(std::string_view scope_id,
                                                                 int64_t seq) {
  return QueryEvent(absl::StrCat("SELECT ", kEventColumns,
                                 " WHERE e.scope_id = $1 AND e.seq < $2 ORDER BY e.seq DESC "
                                 "LIMIT 1"),
                    {scope_id, seq});
}

absl::StatusOr<std::optional<Event>> PgTrailStore::FindEvent(std::string_view root_scope_id,
                                                             std::string_view payload_hash,
                                                             trail::EventKind kind) {
  return QueryEvent(absl::StrCat("SELECT ", kEventColumns,
                                 " JOIN trail_scopes s ON s.id = e.scope_id WHERE s.root_id = $1 "
                                 "AND e.blob_hash = $2 AND e.kind = $3 ORDER BY e.seq DESC "
                                 "LIMIT 1"),
                    {root_scope_id, payload_hash, trail::EventKindName(kind)});
}

absl::StatusOr<std::vector<trail::SessionEntry>> PgTrailStore::ListSessions(std::string_view tenant,
                                                                            int64_t limit) {
  std::vector<trail::SessionEntry> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec("SELECT s.id, s.tenant, s.project, s.session_id, s.created_at_ms, "
               "(SELECT COUNT(*) FROM trail_scopes c WHERE c.root_id = s.id), "
               "(SELECT COALESCE(SUM(e.tokens), 0) FROM trail_events e JOIN trail_scopes c "
               "ON c.id = e.scope_id WHERE c.root_id = s.id) "
               "FROM trail_scopes s WHERE s.kind = 'session' AND ($1 = '' OR s.tenant = $1) "
               "ORDER BY s.pos DESC LIMIT $2",
               {tenant, limit}));
    for (int i = 0; i < r.rows(); ++i) {
      trail::SessionEntry s;
      s.root_scope_id = r.Text(i, 0);
      s.session.tenant = r.Text(i, 1);
      s.session.project = r.Text(i, 2);
      s.session.session_id = r.Text(i, 3);
      s.created_at_ms = r.Int(i, 4);
      s.scope_count = r.Int(i, 5);
      s.event_tokens = r.Int(i, 6);
      out.push_back(std::move(s));
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<Scope>> PgTrailStore::ListScopes(std::string_view root_scope_id) {
  return QueryScopes(absl::StrCat("SELECT ", kScopeColumns,
                                  " FROM trail_scopes s WHERE s.root_id = $1 ORDER BY s.pos"),
                     {root_scope_id});
}

absl::StatusOr<std::vector<Scope>> PgTrailStore::ListOpenScopes(ScopeKind kind, int64_t limit) {
  return QueryScopes(absl::StrCat("SELECT ", kScopeColumns,
                                  " FROM trail_scopes s WHERE s.status = 'open' AND s.kind = $1 "
                                  "ORDER BY s.pos LIMIT $2"),
                     {trail::ScopeKindName(kind), limit});
}

absl::StatusOr<std::vector<Scope>> PgTrailStore::ListOpenScopesOf(std::string_view root_scope_id,
                                                                  ScopeKind kind) {
  return QueryScopes(absl::StrCat("SELECT ", kScopeColumns,
                                  " FROM trail_scopes s WHERE s.status = 'open' AND s.kind = $1 "
                                  "AND s.root_id = $2 ORDER BY s.pos"),
                     {trail::ScopeKindName(kind), root_scope_id});
}

absl::StatusOr<std::vector<trail::SearchHit>> PgTrailStore::Search(std::string_view tenant,
                                                                   std::string_view project,
                                                                   std::string_view query,
                                                                   int64_t limit) {
  ASSIGN_OR_RETURN(std::string tsquery, PgTsQuery(query));
  std::vector<trail::SearchHit> hits;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    hits.clear();
    // The snippet is made from the text as indexed (punctuation as spaces), so that every word
    // the index matched is the one bracketed.
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec(absl::StrCat(
                   "SELECT ", kScopeColumns,
                   ", ts_headline('simple', regexp_replace(s.description || ' ' || s.summary, "
                   "'[[:punct:][:space:]]+', ' ', 'g'), q, 'StartSel=[, StopSel=], "
                   "MaxFragments=2, MaxWords=16, MinWords=4, FragmentDelimiter=\" ... \"') "
                   "FROM trail_scopes s, to_tsquery('simple', $1) q "
                   "WHERE s.search @@ q AND s.tenant = $2 AND s.project = $3 "
                   "ORDER BY ts_rank(s.search, q) DESC, s.pos LIMIT $4"),
               {tsquery, tenant, project, limit}));
    for (int i = 0; i < r.rows(); ++i) {
      hits.push_back(trail::SearchHit{ReadScope(r, i), r.Text(i, kScopeColumnCount)});
    }
    return absl::OkStatus();
  });
  if (!st.ok()) {
    if (st.code() == absl::StatusCode::kInternal) {
      // PgTsQuery leaves no syntax to get wrong, but never let a query error look like a crash.
      return absl::InvalidArgumentError(
          absl::StrCat("search query not understood: ", st.message()));
    }
    return st;
  }
  return hits;
}

absl::StatusOr<int64_t> PgTrailStore::BlobCount() {
  int64_t n = 0;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT COUNT(*) FROM trail_blobs"));
    n = r.Int(0, 0);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return n;
}

}  // namespace contextd::store
