// SqliteTrailStore: the trail's TrailStore in contextd's SQLite database (tables trail_scopes,
// trail_events, trail_blobs of migrations 0002_trail.sql and 0003_auto_scopes.sql, trail_fts_log
// of 0007_search_index_file.sql) and, for trail_search, a SearchIndex in a file of its own that
// follows trail_fts_log. Every write is atomic (Database::BeginWrite/EndWrite): durable against a
// process crash when it returns, or, when the Database groups commits, once its group commits.
// Thread-safe: calls are serialised on the Database's mutex, which it may share with the other
// stores (SqliteBranchStore) of the same connection; searches run on the index's connection.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/sqlite/database.h"
#include "store/sqlite/search_index.h"
#include "trail/trail_store.h"

namespace contextd::store {

// Turns free text into an FTS5 MATCH expression that cannot be a syntax error: each
// whitespace-separated word becomes a quoted phrase (a trailing '*' stays a prefix match), joined
// with OR (bm25 ranks scopes matching more words first). Words without a letter or digit are
// dropped. InvalidArgument if `query` holds no word or more than 1000 bytes.
absl::StatusOr<std::string> FtsQuery(std::string_view query);

// Entries appended to trail_fts_log between two trims of what the index already holds: often,
// so that each trim (a write of the engine's) deletes a few hundred rows, not thousands at once.
inline constexpr int64_t kFtsLogTrimEvery = 256;

class SqliteTrailStore final : public trail::TrailStore {
 public:
  // Opens (creating and migrating) the database file at `path` with its own connection.
  static absl::StatusOr<std::unique_ptr<SqliteTrailStore>> Open(
      const std::string& path, const DatabaseOptions& options = {},
      const SearchIndexOptions& search_options = {});
  // Uses an open database (shared with other stores); prepares the statements and opens the
  // search index of the database's file. InvalidArgument for an in-memory database.
  static absl::StatusOr<std::unique_ptr<SqliteTrailStore>> Create(
      std::shared_ptr<Database> db, const SearchIndexOptions& search_options = {});

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

  // Blobs stored (distinct payloads), for tests and stats.
  absl::StatusOr<int64_t> BlobCount();

  Database& database() { return *db_; }
  SearchIndex& search_index() { return *index_; }

 private:
  explicit SqliteTrailStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  absl::Status PrepareAll();
  // Runs `fn` inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error). Caller holds the mutex.
  template <typename Fn>
  absl::Status InTransaction(Fn fn);
  absl::StatusOr<std::optional<trail::Scope>> GetScopeLocked(std::string_view id);
  // The bodies of OpenScope (`session_root`: the row is its session's root, OpenSessionRoot),
  // AppendEvents (`seqs` may be null; `hashes` are the payloads'
  // ContentHash) and FoldScope. Caller holds the mutex, inside a write.
  absl::Status OpenScopeLocked(const trail::Scope& scope, bool session_root);
  absl::Status AppendEventsLocked(const std::vector<trail::NewEvent>& events,
                                  const std::vector<std::string>& hashes,
                                  std::vector<int64_t>* seqs);
  absl::Status FoldScopeLocked(std::string_view id, std::string_view summary,
                               int64_t summary_tokens, int64_t at_ms);
  static std::vector<std::string> HashPayloads(const std::vector<trail::NewEvent>& events);
  // Appends the scope at `pos` (trail_scopes.pos) to trail_fts_log for the search index, and
  // every kFtsLogTrimEvery entries deletes those it holds. Caller holds the mutex, inside a write.
  absl::Status LogForSearchLocked(int64_t pos);
  // The event of the row `st` stands on (the columns of kEventColumns).
  static absl::StatusOr<trail::Event> ReadEvent(Statement& st);
  static absl::StatusOr<std::vector<trail::Scope>> ReadScopes(Statement& st, int extra_text_col,
                                                              std::vector<std::string>* extra);

  std::shared_ptr<Database> db_;
  Statement insert_scope_;
  Statement find_root_;
  Statement log_fts_;
  Statement trim_fts_log_;
  int64_t logged_since_trim_ = 0;  // under the mutex
  Statement scope_root_;
  Statement insert_blob_;
  Statement insert_event_;
  Statement fold_;
  Statement get_scope_;
  Statement list_events_;
  Statement count_events_;
  Statement get_event_;
  Statement previous_event_;
  Statement find_event_;
  Statement list_sessions_;
  Statement list_scopes_;
  Statement list_open_;
  Statement list_open_of_;
  Statement blob_count_;
  // Declared last: destroyed (its thread stopped) first.
  std::unique_ptr<SearchIndex> index_;
};

}  // namespace contextd::store
