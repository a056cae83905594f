// PgMemoryStore: the ReasoningBank's MemoryStore in PostgreSQL (tables memories, memory_history,
// memory_stems, memory_terms, memory_project_terms, memory_corpus, memory_vectors of
// pg_migrations.h). A search finds the visible items whose stems (memory_stems' GIN-indexed
// tsvector) hold one of the query's rarest terms, up to kPostingsBudget postings and
// kMaxQueryTerms terms, as in SQLite; the bank scores them. Every write is one transaction
// committed before it returns. Thread-safe: each call takes a pooled connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory_store.h"
#include "store/postgres/pg_database.h"

namespace contextd::store {

class PgMemoryStore final : public memory::MemoryStore {
 public:
  static absl::StatusOr<std::unique_ptr<PgMemoryStore>> Open(const PgOptions& options);
  // Over an open database; stems and counts every item again first when memories and
  // memory_stems differ in row count (after migration 10 or a transfer).
  static absl::StatusOr<std::unique_ptr<PgMemoryStore>> Create(std::shared_ptr<PgDatabase> db);

  absl::Status Insert(const memory::MemoryItem& item, const memory::HistoryEntry& entry) override;
  absl::Status Update(const memory::MemoryItem& item,
                      const std::vector<memory::HistoryEntry>& entries) override;
  absl::Status NoteUses(const std::vector<std::string>& ids,
                        const std::vector<memory::HistoryEntry>& entries) override;
  absl::StatusOr<std::optional<memory::MemoryItem>> Get(std::string_view id) override;
  absl::StatusOr<std::vector<memory::MemoryItem>> GetMany(
      const std::vector<std::string>& ids) override;
  absl::StatusOr<std::vector<memory::MemoryItem>> List(const memory::ListFilter& filter) override;
  absl::StatusOr<std::vector<memory::HistoryEntry>> History(std::string_view id) override;
  absl::StatusOr<std::vector<memory::MemoryItem>> FindBySourceTask(
      const memory::Visibility& v, std::string_view description) override;
  absl::StatusOr<memory::Matches> FindMatches(const memory::Visibility& v,
                                              const std::vector<std::string>& terms,
                                              int limit) override;
  absl::Status PutVector(std::string_view id, std::string_view model,
                         const std::vector<float>& vector) override;
  absl::StatusOr<std::vector<StoredVector>> AllVectors(std::string_view model) override;

  // Items in the bank (all statuses), for metrics.
  absl::StatusOr<int64_t> Count();

 private:
  explicit PgMemoryStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  absl::StatusOr<std::vector<memory::MemoryItem>> QueryItems(std::string_view sql,
                                                             const std::vector<PgParam>& params);
  absl::Status RebuildStemsIfNeeded();
  // Fills out.projects: the statistics of each matched item's project for the `known` terms.
  absl::Status ProjectStats(PgConn& c, const std::vector<std::string>& known, memory::Matches& out);

  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
