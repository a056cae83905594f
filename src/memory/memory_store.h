// MemoryStore: what the ReasoningBank needs from storage (items, their append-only history, the
// stemmed texts and term statistics the bank ranks by, and the optional vectors), implemented by
// store/ (SQLite with FTS5, PostgreSQL with GIN). Every write is atomic and durable when it
// returns; an item's stems and term counts are written in its transaction. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "memory/memory_item.h"
#include "memory/terms.h"

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

// Document statistics of one collection: every item of one (tenant, project), or of the whole
// store (retired and pending items included: nothing is deleted). Lengths count stems
// (memory/terms.h): content = title + description and content + tags; task = the source task's
// description + prompt.
struct TermFrequency {
  int64_t content = 0;  // items holding the term in their content fields
  int64_t task = 0;     // ... in their source task
};
struct CorpusStats {
  int64_t items = 0;
  int64_t content_length = 0;  // summed over the items
  int64_t task_length = 0;
  std::map<std::string, TermFrequency, std::less<>> terms;  // the asked terms it knows
};

// One item that matched a search, with what the bank scores it by.
struct Match {
  std::string id;
  std::string tenant;
  std::string project;
  Scope scope = Scope::kProject;
  ItemStems stems;
};

// What a search found: the items visible under the Visibility that hold at least one of the
// kept terms, in no particular order, and the statistics to score them with.
struct Matches {
  std::vector<std::string> kept;  // the terms searched for, rarest first
  std::vector<Match> items;
  CorpusStats global;  // the whole store, for the asked terms it knows
  // Each matched item's (tenant, project), for the asked terms it knows.
  std::map<std::pair<std::string, std::string>, CorpusStats> projects;
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

  // The items visible under `v` that hold any of the rarest of `terms` (stems, QueryTerms):
  // terms unknown to the store are dropped, the known ones kept rarest first until their
  // document frequencies add up to kPostingsBudget (at least one, at most kMaxQueryTerms;
  // store/internal/memory_search.h), and at most `limit` items are read. Statistics are given for
  // every known term of `terms`, kept or not. No terms, or none known: no items.
  virtual absl::StatusOr<Matches> FindMatches(const Visibility& v,
                                              const std::vector<std::string>& terms, int limit) = 0;

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
