// MemoryBank: the ReasoningBank over a MemoryStore. Records, searches and rates memories (the
// memory_* tools), retrieves what to inject (BM25 over stems against each item's own project's
// statistics, plus vector similarity with an embedder; the caller's own project first, other
// projects only above a floor, nothing below the injection floor), and distils finished branches
// into candidates, merging near-duplicates with history. Every text is sanitised (secrets scrubbed,
// private spans withheld) before it is stored. Thread-safe: it keeps no mutable state of its own
// besides the vector index, which is; calls may run on any thread, never on the engine executor
// (store writes would wait on the engine's open group transaction).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "memory/distiller.h"
#include "memory/embedder.h"
#include "memory/memory_item.h"
#include "memory/memory_store.h"
#include "memory/ranking.h"
#include "memory/terms.h"

namespace contextd::memory {

struct BankOptions {
  double min_confidence = 0.7;  // below it an item is not injected (still searchable)
  int max_items = 10;           // at most this many items injected into one branch
  bool auto_confirm = false;    // distilled candidates become active at once
  // The relevance score (memory/ranking.h: BM25 over stems, against the statistics of the item's
  // own project) and its field weights. The source task counts task_weight beside the item's
  // texts: task sentences are short and generic ("Run the reproduction script"), so they match
  // other projects' tasks word for word (bench/memory/README.md, issue 35).
  RankWeights weights{};
  int per_ranking = 50;  // how deep the vector ranking is read
  // At most this many matching items are read from the store and scored per query.
  int max_matches = 1000;
  // Retrieve injects nothing scoring below injection_floor, and items of other projects (visible
  // through team or org scope) only from other_project_floor up: nothing rather than something
  // irrelevant. Tuned on the tuning split of bench/memory (issue 35).
  double injection_floor = 0.02;
  double other_project_floor = 0.2;
  // With an embedder, a visible item at rank r (from 0) of the vector ranking gains
  // vector_weight * (1 - r / per_ranking) (not measured: no embedder in bench/memory).
  double vector_weight = 1.0;
  // Two candidates of the same source task whose word sets overlap at least this much (Jaccard)
  // are one memory: the newer one merges into the older.
  double merge_overlap = 0.6;
  // Org-scoped items reach every tenant (true) or only the tenant that recorded them, in all its
  // projects (false, the default: tenants of one deployment may be different customers).
  bool org_across_tenants = false;
};

// Who is asking: the tenant and project every lookup is scoped by, and who acts (for history).
struct Caller {
  std::string tenant = "local";
  std::string project = "default";
  std::string actor;  // session id, branch id, or "cli"
};

// memory_record's fields (not yet sanitised).
struct RecordRequest {
  std::string title;
  std::string description;
  std::string content;
  Outcome outcome = Outcome::kSuccess;
  std::vector<std::string> tags;
  Scope scope = Scope::kProject;
  Source source;  // the caller's active branch, if any
};

struct SearchHit {
  MemoryItem item;
  double score = 0;  // relevance (memory/ranking.h), higher is better
};

// One item ready to inject: what the branch will read, its token count and its relevance.
struct InjectionCandidate {
  MemoryItem item;
  std::string text;  // InjectionText(item)
  int64_t tokens = 0;
  double score = 0;          // relevance (memory/ranking.h), at or above the floors
  bool own_project = false;  // the caller's tenant and project (ranked before the others)
};

struct ExtractResult {
  std::vector<MemoryItem> stored;  // new candidates (pending unless auto_confirm)
  std::vector<MemoryItem> merged;  // existing items a candidate merged into
  std::string distiller;           // which distiller produced them
  std::string warning;             // set when a model distiller failed and the structural one ran
};

// What the bank reports as it works (memory.injected, memory.extracted, ...): for metrics, logs
// and event buses. Called on the calling thread; must be quick and not call back into the bank.
struct MemoryEvent {
  // "memory.recorded", "memory.extracted", "memory.injected", "memory.feedback", "memory.outcome",
  // "memory.retired"; "memory.fallback.distiller" / "memory.fallback.embeddings" when a model
  // endpoint failed and the bank went on without it.
  std::string type;
  std::string tenant;
  std::string project;
  std::string branch_id;
  std::vector<std::string> memory_ids;
  int64_t tokens = 0;  // memory.injected: tokens injected
};
using EventSink = std::function<void(const MemoryEvent&)>;

using TextFilter = std::function<std::string(std::string_view)>;
using TokenCountFn = std::function<int64_t(std::string_view)>;

class MemoryBank {
 public:
  // `store`, `clock` and the optional parts (may be null) must outlive the bank. `sanitize`
  // scrubs secrets and withholds private spans; `count_tokens` counts what a branch reads.
  struct Parts {
    MemoryStore* store = nullptr;
    const base::Clock* clock = nullptr;
    TextFilter sanitize;
    TokenCountFn count_tokens;
    Distiller* model_distiller = nullptr;  // null: structural only
    Embedder* embedder = nullptr;          // null: BM25 only
    VectorIndex* vectors = nullptr;        // required with an embedder
    EventSink events;                      // may be empty
  };
  MemoryBank(Parts parts, BankOptions options);

  // memory_record: validates (InvalidArgument naming the field), sanitises and stores an active
  // item; history "recorded".
  absl::StatusOr<MemoryItem> Record(const Caller& caller, const RecordRequest& request);
  // memory_search: items visible to the caller (pending ones included, marked by their status),
  // best first, at most `limit` (1..50). InvalidArgument for an empty query or a bad limit.
  absl::StatusOr<std::vector<SearchHit>> Search(const Caller& caller, std::string_view query,
                                                int limit, std::optional<Scope> scope);
  // memory_feedback / memory_outcome: count the signal, confirm a pending item, append history.
  // NotFound (same text for an item the caller cannot see); FailedPrecondition if retired.
  absl::StatusOr<MemoryItem> Feedback(const Caller& caller, std::string_view id, bool helpful);
  absl::StatusOr<MemoryItem> RecordOutcome(const Caller& caller, std::string_view id,
                                           bool succeeded);
  // Retires an item (kept with its history, no longer searched). NotFound as above.
  absl::StatusOr<MemoryItem> Retire(const Caller& caller, std::string_view id,
                                    std::string_view reason);
  absl::StatusOr<MemoryItem> Get(const Caller& caller, std::string_view id);

  // What to inject for a task `query` (a branch's description + prompt, or a conversation's first
  // user text): active items at or above min_confidence whose relevance reaches injection_floor,
  // the caller's own project's items first (any scope), then other projects' items that reach
  // other_project_floor, each group best first; at most 2 x max_items candidates (the caller fits
  // them greedily into the budget). Empty when nothing is relevant enough.
  absl::StatusOr<std::vector<InjectionCandidate>> Retrieve(const Caller& caller,
                                                           std::string_view query);
  // Counts one use of each injected item (history "injected", actor the branch) and reports
  // memory.injected.
  absl::Status NoteInjected(const Caller& caller, std::string_view branch_id,
                            const std::vector<std::string>& ids, int64_t tokens);

  // Distils a finished branch into at most kMaxCandidates items (model distiller if any, the
  // structural one otherwise or when it fails), sanitised, merged into near-duplicates of the
  // same source task, stored pending (or active with auto_confirm). Reports memory.extracted.
  absl::StatusOr<ExtractResult> Extract(const BranchTrace& trace, Scope scope);

  // Stores an item from an export as it is (id, counts and status kept; texts sanitised again).
  // AlreadyExists if its id is taken; history "imported".
  absl::Status Import(MemoryItem item, std::string_view actor);

  // Embeds and indexes items that have no vector yet (with an embedder); for startup. Returns how
  // many were indexed.
  absl::StatusOr<size_t> LoadVectors();

  const BankOptions& options() const { return options_; }

 private:
  absl::StatusOr<MemoryItem> GetVisible(const Caller& caller, std::string_view id);
  // The items visible under `v` that match `query`, scored (memory/ranking.h), the caller's own
  // project's first, each group best first.
  struct Scored {
    std::string id;
    double score = 0;
    bool own_project = false;
  };
  absl::StatusOr<std::vector<Scored>> Rank(const Visibility& v, std::string_view query);
  // Adds the vector ranking's bonus to `scores` (id -> score), with an embedder.
  absl::Status AddVectorScores(const Visibility& v, std::string_view query,
                               std::map<std::string, double>& scores);
  absl::StatusOr<MemoryItem> Signal(const Caller& caller, std::string_view id,
                                    std::string_view action, bool positive, bool is_outcome);
  void Index(const MemoryItem& item);
  void Emit(MemoryEvent event) const;
  HistoryEntry Entry(std::string_view id, std::string_view action, std::string_view actor,
                     std::string detail) const;

  Parts parts_;
  BankOptions options_;
};

}  // namespace contextd::memory
