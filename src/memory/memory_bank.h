// MemoryBank: the ReasoningBank over a MemoryStore. Records, searches and rates memories (the
// memory_* tools), retrieves what to inject into a new branch (reciprocal-rank fusion of BM25 over
// the items, BM25 over their source tasks and, with an embedder, vector similarity; then the
// scope walk project -> team -> org), and distils finished branches into candidates, merging
// near-duplicates with history. Every text is sanitised (secrets scrubbed, private spans
// withheld) before it is stored. Thread-safe: it keeps no mutable state of its own besides the
// vector index, which is; calls may run on any thread, never on the engine executor (store writes
// would wait on the engine's open group transaction).
#pragma once

#include <cstdint>
#include <functional>
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

namespace contextd::memory {

struct BankOptions {
  double min_confidence = 0.7;  // below it an item is not injected (still searchable)
  int max_items = 10;           // at most this many items injected into one branch
  bool auto_confirm = false;    // distilled candidates become active at once
  int rrf_k = 60;               // reciprocal-rank fusion constant: score = sum w/(k + rank)
  // The weight w of the source-task ranking (the item-text and vector rankings weigh 1): task
  // sentences are short and generic ("Run the reproduction script"), so they match other
  // projects' tasks word for word (bench/memory/README.md).
  double task_weight = 1.0;
  int per_ranking = 50;  // how deep each ranking is read
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
  double score = 0;  // fused reciprocal-rank score, higher is better
};

// One item ready to inject: what the branch will read and its token count.
struct InjectionCandidate {
  MemoryItem item;
  std::string text;  // InjectionText(item)
  int64_t tokens = 0;
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

  // What to inject for a branch whose task is `query` (description + prompt): active items at or
  // above min_confidence, ranked by the fusion, project items first, then team, then org; at
  // most 2 x max_items candidates (the caller fits them greedily into the budget).
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
  // Fused ranking of the items visible under `v` for `query`: ids best first with their scores.
  absl::StatusOr<std::vector<std::pair<std::string, double>>> Rank(const Visibility& v,
                                                                   std::string_view query,
                                                                   int depth);
  absl::StatusOr<MemoryItem> Signal(const Caller& caller, std::string_view id,
                                    std::string_view action, bool positive, bool is_outcome);
  void Index(const MemoryItem& item);
  void Emit(MemoryEvent event) const;
  HistoryEntry Entry(std::string_view id, std::string_view action, std::string_view actor,
                     std::string detail) const;

  Parts parts_;
  BankOptions options_;
};

// Lowercase words of `text` worth searching for: letters and digits, 2-40 bytes, English stop
// words dropped, each once, at most 64, in order of first appearance.
std::vector<std::string> QueryTerms(std::string_view text);
// The distinct words of `text` as QueryTerms splits them, stop words kept and no cap: the terms
// whose document frequencies a store keeps (QueryTerms' words are always among them).
std::vector<std::string> IndexTerms(std::string_view text);
// Jaccard overlap of the QueryTerms word sets of two texts (0 when both are empty).
double WordOverlap(std::string_view a, std::string_view b);

}  // namespace contextd::memory
