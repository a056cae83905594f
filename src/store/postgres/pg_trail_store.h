// PgTrailStore: the trail's TrailStore in PostgreSQL (tables trail_scopes, trail_events,
// trail_blobs of pg_migrations.h). Every write is one transaction committed before it returns.
// Search uses the scopes' generated tsvector column and its GIN index: ts_rank orders the hits
// (scopes matching more of the words first, as FTS5's bm25 does), ts_headline makes the snippet.
// Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/postgres/pg_database.h"
#include "trail/trail_store.h"

namespace contextd::store {

// Turns free text into a to_tsquery('simple', ...) expression that cannot be a syntax error: each
// whitespace-separated word is split at ASCII punctuation (as the indexed text is) into parts
// that are quoted, lowercased (ASCII) and joined with <-> (a phrase); a trailing '*' makes the
// last part a prefix (:*); words are joined with | (any may match). Words without a letter or
// digit are dropped. InvalidArgument if `query` holds no word or more than 1000 bytes.
absl::StatusOr<std::string> PgTsQuery(std::string_view query);

class PgTrailStore final : public trail::TrailStore {
 public:
  static absl::StatusOr<std::unique_ptr<PgTrailStore>> Open(const PgOptions& options);
  static std::unique_ptr<PgTrailStore> Create(std::shared_ptr<PgDatabase> db);

  absl::Status OpenScope(const trail::Scope& scope) override;
  absl::StatusOr<std::string> OpenSessionRoot(const trail::Scope& root) override;
  absl::StatusOr<std::vector<int64_t>> AppendEvents(
      const std::vector<trail::NewEvent>& events) override;
  absl::Status FoldScope(std::string_view id, std::string_view summary, int64_t summary_tokens,
                         int64_t at_ms) override;
  absl::Status OpenScopeWithEvents(const trail::Scope& scope,
                                   const std::vector<trail::NewEvent>& events) override;
  absl::Status FoldScopeAfterEvents(const std::vector<trail::NewEvent>& events, std::string_view id,
                                    std::string_view summary, int64_t summary_tokens,
                                    int64_t at_ms) override;
  absl::StatusOr<std::optional<trail::Scope>> GetScope(std::string_view id) override;
  absl::StatusOr<trail::EventPage> ListEvents(std::string_view scope_id, int64_t offset,
                                              int64_t limit) override;
  absl::StatusOr<std::optional<trail::Event>> GetEvent(int64_t seq) override;
  absl::StatusOr<std::optional<trail::Event>> PreviousEvent(std::string_view scope_id,
                                                            int64_t seq) override;
  absl::StatusOr<std::optional<trail::Event>> FindEvent(std::string_view root_scope_id,
                                                        std::string_view payload_hash,
                                                        trail::EventKind kind) override;
  absl::StatusOr<std::vector<trail::SessionEntry>> ListSessions(std::string_view tenant,
                                                                int64_t limit) override;
  absl::StatusOr<std::vector<trail::Scope>> ListScopes(std::string_view root_scope_id) override;
  absl::StatusOr<std::vector<trail::Scope>> ListOpenScopes(trail::ScopeKind kind,
                                                           int64_t limit) override;
  absl::StatusOr<std::vector<trail::Scope>> ListOpenScopesOf(std::string_view root_scope_id,
                                                             trail::ScopeKind kind) override;
  absl::StatusOr<std::vector<trail::SearchHit>> Search(std::string_view tenant,
                                                       std::string_view project,
                                                       std::string_view query,
                                                       int64_t limit) override;

  // Other instances share the database.
  bool shared() const override { return true; }

  // Blobs stored (distinct payloads), for tests and stats.
  absl::StatusOr<int64_t> BlobCount();

 private:
  explicit PgTrailStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  static absl::Status OpenScopeIn(PgConn& c, const trail::Scope& scope);
  static absl::Status AppendEventsIn(PgConn& c, const std::vector<trail::NewEvent>& events,
                                     const std::vector<std::string>& hashes,
                                     std::vector<int64_t>* seqs);
  static absl::Status FoldScopeIn(PgConn& c, std::string_view id, std::string_view summary,
                                  int64_t summary_tokens, int64_t at_ms);
  // Runs one query whose rows are scopes (kScopeColumns first) and reads them.
  absl::StatusOr<std::vector<trail::Scope>> QueryScopes(std::string_view sql,
                                                        const std::vector<PgParam>& params);
  absl::StatusOr<std::optional<trail::Event>> QueryEvent(std::string_view sql,
                                                         const std::vector<PgParam>& params);

  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
