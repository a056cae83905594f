// SqliteMemoryStore: the ReasoningBank's MemoryStore in contextd's SQLite database (tables of
// migration 0010_memory.sql: memories, memory_history, memory_fts, memory_task_fts,
// memory_vectors). Each write is one atomic transaction, durable when it returns. BM25 queries
// keep the rarest terms up to a postings budget (kPostingsBudget), so a query's cost is bounded
// however large the bank grows. Thread-safe: calls are serialised on the Database's mutex. Give it
// its own connection (Open): the engine's connection holds group transactions open.
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
  absl::StatusOr<std::vector<memory::Ranked>> SearchContent(const memory::Visibility& v,
                                                            const std::vector<std::string>& terms,
                                                            int limit) override;
  absl::StatusOr<std::vector<memory::Ranked>> SearchTasks(const memory::Visibility& v,
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
  // Adds `sign` (+1 or -1) to the document frequencies of `item`'s words in both indexes.
  absl::Status CountTermsLocked(const memory::MemoryItem& item, int sign);
  absl::StatusOr<std::vector<memory::Ranked>> SearchLocked(int df_column, Statement& query,
                                                           const memory::Visibility& v,
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
  Statement get_term_;
  Statement search_content_;
  Statement search_tasks_;
  Statement put_vector_;
  Statement all_vectors_;
  Statement count_;
};

}  // namespace contextd::store
