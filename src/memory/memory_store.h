// MemoryStore: what the ReasoningBank needs from storage (items, their append-only history, two
// BM25 rankings and the optional vectors), implemented by store/ (SQLite with FTS5). Every write
// is atomic and durable when it returns. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "memory/memory_item.h"

namespace contextd::memory {

// Which items a reader may see: project-scoped items of (tenant, project), team-scoped items of
// the tenant, and org-scoped items of the tenant, or of every tenant when the deployment shares
// them (`org_across_tenants`, memory.org_across_tenants); `scope` narrows that to one tier.
struct Visibility {
  std::string tenant;
  std::string project;
  std::optional<Scope> scope;
  bool include_pending = false;  // retired items are never visible to searches
  bool org_across_tenants = false;
};

// One ranked match: the item id and its BM25 score (lower is better, as FTS5's bm25()).
struct Ranked {
  std::string id;
  double score = 0;
};

// list/export filter; empty optionals match everything (retired included).
struct ListFilter {
  std::optional<std::string> tenant;
  std::optional<std::string> project;
  std::optional<Status> status;
  std::string after_id;  // keyset pagination: ids greater than this
  int limit = 100;
};

class MemoryStore {
 public:
  virtual ~MemoryStore() = default;

  // Inserts `item` (its id new) and appends `entry`, atomically. AlreadyExists for a taken id.
  virtual absl::Status Insert(const MemoryItem& item, const HistoryEntry& entry) = 0;
  // Replaces every mutable field of the stored item `item.id` (texts, tags, status, counts,
  // merged_into, updated_at) and appends `entries`, atomically. NotFound if absent.
  virtual absl::Status Update(const MemoryItem& item, const std::vector<HistoryEntry>& entries) = 0;
  // Adds `uses` to use_count of each id and appends `entries`, atomically (unknown ids ignored).
  virtual absl::Status NoteUses(const std::vector<std::string>& ids,
                                const std::vector<HistoryEntry>& entries) = 0;
  virtual absl::StatusOr<std::optional<MemoryItem>> Get(std::string_view id) = 0;
  // The items of `ids` that exist, in the order given.
  virtual absl::StatusOr<std::vector<MemoryItem>> GetMany(const std::vector<std::string>& ids) = 0;
  virtual absl::StatusOr<std::vector<MemoryItem>> List(const ListFilter& filter) = 0;
  virtual absl::StatusOr<std::vector<HistoryEntry>> History(std::string_view id) = 0;
  // Items visible under `v` whose source task equals `description` (exact text): candidates for
  // a merge.
  virtual absl::StatusOr<std::vector<MemoryItem>> FindBySourceTask(
      const Visibility& v, std::string_view description) = 0;

  // BM25 over title, description, content and tags of the items visible under `v`, best first,
  // at most `limit`. `terms` are lowercase words; the store may keep only the rarest of them
  // (a query's cost grows with the postings it reads). No terms, or none known: empty.
  virtual absl::StatusOr<std::vector<Ranked>> SearchContent(const Visibility& v,
                                                            const std::vector<std::string>& terms,
                                                            int limit) = 0;
  // The same over the items' source task texts (description and prompt).
  virtual absl::StatusOr<std::vector<Ranked>> SearchTasks(const Visibility& v,
                                                          const std::vector<std::string>& terms,
                                                          int limit) = 0;

  // Optional vectors (embeddings) of items, for an external vector index.
  virtual absl::Status PutVector(std::string_view id, std::string_view model,
                                 const std::vector<float>& vector) = 0;
  // Every stored vector of `model`, with its item id and the item's rowid-order position.
  struct StoredVector {
    std::string id;
    std::vector<float> vector;
  };
  virtual absl::StatusOr<std::vector<StoredVector>> AllVectors(std::string_view model) = 0;
};

}  // namespace contextd::memory
