// SqliteMemoryStore: the ReasoningBank's MemoryStore in contextd's SQLite database (tables of
// migrations 0010_memory.sql and 0020_memory_stems.sql: memories, memory_history, memory_stems
// and its FTS5 index, memory_terms, memory_project_terms, memory_corpus, memory_vectors). Each
// write is one atomic transaction, durable when it returns. A search keeps the rarest terms up to
// a postings budget (kPostingsBudget), so its cost is bounded however large the bank grows.
// Thread-safe: calls are serialised on the Database's mutex. Give it its own connection (Open): the
// engine's connection holds group transactions open.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "memory/memory_store.h"
#include "store/internal/memory_search.h"
#include "store/sqlite/database.h"

namespace contextd::store {

class SqliteMemoryStore final : public memory::MemoryStore {
 public:
  // Opens (creating and migrating) the database file at `path` with its own connection.
  static absl::StatusOr<std::unique_ptr<SqliteMemoryStore>> Open(
      const std::string& path, const DatabaseOptions& options = {});

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
  explicit SqliteMemoryStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  absl::Status PrepareAll();
  absl::Status AppendHistoryLocked(const memory::HistoryEntry& entry);
  // Stems and counts every item again when memories and memory_stems differ in row count (after
  // migration 21 or a transfer), in one transaction; nothing otherwise.
  absl::Status RebuildStemsIfNeeded();
  // Adds `sign` (+1 or -1) to the global and per-project document frequencies of `item`'s stems
  // and to its project's item count and lengths.
  absl::Status CountTermsLocked(const memory::MemoryItem& item, const memory::ItemStems& stems,
                                int sign);
  // Writes (or replaces) the stems row of the stored item `item.id`.
  absl::Status PutStemsLocked(const memory::MemoryItem& item, const memory::ItemStems& stems);
  // Fills out.projects: the statistics of each matched item's project for the `known` terms.
  absl::Status ProjectStatsLocked(const std::vector<std::string>& known, memory::Matches& out);
  // FindMatches inside its read transaction.
  absl::StatusOr<memory::Matches> FindMatchesLocked(const memory::Visibility& v,
                                                    const std::vector<std::string>& terms,
                                                    int limit);

  std::shared_ptr<Database> db_;
  Statement insert_;
  Statement update_;
  Statement note_use_;
  Statement insert_history_;
  Statement get_;
  Statement history_;
  Statement by_task_;
  Statement add_term_;
  Statement add_project_term_;
  Statement add_corpus_;
  Statement put_stems_;
  Statement get_term_;
  Statement get_project_term_;
  Statement get_corpus_;
  Statement all_corpus_;
  Statement find_matches_;
  Statement put_vector_;
  Statement all_vectors_;
  Statement count_;
};

}  // namespace contextd::store
