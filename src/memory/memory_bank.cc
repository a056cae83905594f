#include "memory/memory_bank.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/ids.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "memory/internal/sv.h"

namespace contextd::memory {
namespace {

using internal::Sv;

// Common English words that say nothing about a task.
const std::set<std::string_view>& StopWords() {
  static const auto* words = new std::set<std::string_view>{
      "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
      "but", "by", "can", "could", "did", "do", "does", "each", "for", "from", "had", "has", "have",
      "how", "if", "in", "into", "is", "it", "its", "just", "may", "more", "most", "must", "no",
      "not", "of", "on", "one", "only", "or", "other", "our", "out", "should", "so", "some", "such",
      "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
      "to", "up", "use", "was", "we", "were", "what", "when", "where", "which", "while", "who",
      "why", "will", "with", "would", "you", "your",
      // Pieces of URLs: rare in a bank of lessons, so "rarest first" would keep them over the
      // words that name the task.
      "com", "html", "http", "https", "org", "www"};
  return *words;
}

int Tier(Scope s) {
  switch (s) {
    case Scope::kProject:
      return 0;
    case Scope::kTeam:
      return 1;
    case Scope::kOrg:
      return 2;
  }
  return 2;
}

bool VisibleTo(const MemoryItem& item, const Visibility& v) {
  switch (item.scope) {
    case Scope::kProject:
      return item.tenant == v.tenant && item.project == v.project;
    case Scope::kTeam:
      return item.tenant == v.tenant;
    case Scope::kOrg:
      return v.org_across_tenants || item.tenant == v.tenant;
  }
  return false;
}

absl::Status NotFound(std::string_view id) {
  return absl::NotFoundError(absl::StrCat("memory ", Sv(id), " not found"));
}

}  // namespace

namespace {

// Calls `emit` with each distinct word of `text` (lowercase ASCII letters and digits; a non-ASCII
// byte stays in its word), 2-40 bytes, in order of first appearance, until it returns false.
template <typename Emit>
void ForEachWord(std::string_view text, bool skip_stop_words, Emit emit) {
  std::set<std::string> seen;
  std::string word;
  auto flush = [&]() -> bool {
    bool go_on = true;
    if (word.size() >= 2 && word.size() <= 40 &&
        !(skip_stop_words && StopWords().count(word) != 0) && seen.insert(word).second) {
      go_on = emit(word);
    }
    word.clear();
    return go_on;
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || u >= 0x80) {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else if (!flush()) {
      return;
    }
  }
  flush();
}

}  // namespace

std::vector<std::string> QueryTerms(std::string_view text) {
  std::vector<std::string> out;
  ForEachWord(text, /*skip_stop_words=*/true, [&out](const std::string& w) {
    out.push_back(w);
    return out.size() < 64;
  });
  return out;
}

std::vector<std::string> IndexTerms(std::string_view text) {
  std::vector<std::string> out;
  ForEachWord(text, /*skip_stop_words=*/false, [&out](const std::string& w) {
    out.push_back(w);
    return true;
  });
  return out;
}

double WordOverlap(std::string_view a, std::string_view b) {
  std::vector<std::string> wa = QueryTerms(a), wb = QueryTerms(b);
  std::set<std::string> sa(wa.begin(), wa.end()), sb(wb.begin(), wb.end());
  if (sa.empty() && sb.empty()) return 0;
  size_t common = 0;
  for (const std::string& w : sa) common += sb.count(w);
  return static_cast<double>(common) / static_cast<double>(sa.size() + sb.size() - common);
}

MemoryBank::MemoryBank(Parts parts, BankOptions options)
    : parts_(std::move(parts)), options_(options) {}

HistoryEntry MemoryBank::Entry(std::string_view id, std::string_view action, std::string_view actor,
                               std::string detail) const {
  HistoryEntry e;
  e.memory_id = std::string(id);
  e.action = std::string(action);
  e.actor = std::string(actor);
  e.detail = std::move(detail);
  e.at_ms = parts_.clock->WallMillis();
  return e;
}

void MemoryBank::Emit(MemoryEvent event) const {
  if (parts_.events) parts_.events(event);
}

void MemoryBank::Index(const MemoryItem& item) {
  if (parts_.embedder == nullptr || parts_.vectors == nullptr) return;
  auto vectors = parts_.embedder->Embed({absl::StrCat(
      item.title, "\n", item.description, "\n", item.content, "\n", item.source.description)});
  if (!vectors.ok() || vectors->size() != 1) {
    base::LogWarn(absl::StrCat("memory: embedding ", item.id, " failed (BM25 still finds it): ",
                               vectors.ok() ? "no vector" : vectors.status().message()));
    Emit({"memory.fallback.embeddings", item.tenant, item.project, "", {item.id}, 0});
    return;
  }
  absl::Status put = parts_.store->PutVector(item.id, parts_.embedder->model(), (*vectors)[0]);
  if (put.ok()) put = parts_.vectors->Add(item.id, (*vectors)[0]);
  if (!put.ok()) base::LogWarn(absl::StrCat("memory: indexing ", item.id, ": ", put.message()));
}

absl::StatusOr<MemoryItem> MemoryBank::Record(const Caller& caller, const RecordRequest& request) {
  MemoryItem item;
  item.id = base::TimeOrderedId("mem_");
  item.tenant = caller.tenant;
  item.project = caller.project;
  item.title = request.title;
  item.description = request.description;
  item.content = request.content;
  item.tags = request.tags;
  // Limits apply to what the caller sent; sanitising only shortens or keeps lengths similar.
  RETURN_IF_ERROR(ValidateFields(item));
  item.title = parts_.sanitize(item.title);
  item.description = parts_.sanitize(item.description);
  item.content = parts_.sanitize(item.content);
  for (std::string& tag : item.tags) tag = parts_.sanitize(tag);
  item.outcome = request.outcome;
  item.scope = request.scope;
  item.source.branch_id = request.source.branch_id;
  item.source.description = parts_.sanitize(request.source.description);
  item.source.prompt = parts_.sanitize(request.source.prompt);
  item.status = Status::kActive;
  item.origin = "recorded";
  item.created_at_ms = item.updated_at_ms = parts_.clock->WallMillis();
  RETURN_IF_ERROR(parts_.store->Insert(item, Entry(item.id, "recorded", caller.actor,
                                                   absl::StrCat("scope ", ScopeName(item.scope)))));
  Index(item);
  Emit({"memory.recorded", caller.tenant, caller.project, item.source.branch_id, {item.id}, 0});
  return item;
}

absl::StatusOr<std::vector<std::pair<std::string, double>>> MemoryBank::Rank(const Visibility& v,
                                                                             std::string_view query,
                                                                             int depth) {
  std::vector<std::string> terms = QueryTerms(query);
  std::unordered_map<std::string, double> fused;
  auto add = [&](const std::vector<std::string>& ids, double weight = 1.0) {
    for (size_t r = 0; r < ids.size(); ++r) {
      fused[ids[r]] += weight / static_cast<double>(options_.rrf_k + static_cast<int>(r) + 1);
    }
  };
  auto ids_of = [](const std::vector<Ranked>& ranked) {
    std::vector<std::string> ids;
    ids.reserve(ranked.size());
    for (const Ranked& r : ranked) ids.push_back(r.id);
    return ids;
  };
  if (!terms.empty()) {
    ASSIGN_OR_RETURN(std::vector<Ranked> content, parts_.store->SearchContent(v, terms, depth));
    ASSIGN_OR_RETURN(std::vector<Ranked> tasks, parts_.store->SearchTasks(v, terms, depth));
    add(ids_of(content));
    add(ids_of(tasks), options_.task_weight);
  }
  if (parts_.embedder != nullptr && parts_.vectors != nullptr && parts_.vectors->size() > 0) {
    // The query leaves the process: scrubbed first, as every text the bank sends or stores
    // (a memory_search query is the agent's own text).
    auto q = parts_.embedder->Embed({parts_.sanitize(query)});
    if (q.ok() && q->size() == 1) {
      // The index holds every tenant's vectors: read deeper, visibility is checked on the items.
      auto near = parts_.vectors->Nearest((*q)[0], depth * 4);
      if (near.ok()) {
        std::vector<std::string> ids;
        for (const Neighbour& n : *near) ids.push_back(n.id);
        ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
        std::vector<std::string> visible;
        for (const MemoryItem& item : items) {
          bool status_ok = item.status == Status::kActive ||
                           (v.include_pending && item.status == Status::kPending);
          if (status_ok && VisibleTo(item, v) && (!v.scope || item.scope == *v.scope)) {
            visible.push_back(item.id);
            if (static_cast<int>(visible.size()) >= depth) break;
          }
        }
        add(visible);
      }
    } else {
      base::LogWarn(absl::StrCat("memory: query embedding failed (BM25 only): ",
                                 q.ok() ? "no vector" : q.status().message()));
      Emit({"memory.fallback.embeddings", v.tenant, v.project, "", {}, 0});
    }
  }
  std::vector<std::pair<std::string, double>> out(fused.begin(), fused.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

absl::StatusOr<std::vector<SearchHit>> MemoryBank::Search(const Caller& caller,
                                                          std::string_view query, int limit,
                                                          std::optional<Scope> scope) {
  if (absl::StripAsciiWhitespace(Sv(query)).empty()) {
    return absl::InvalidArgumentError("query must not be empty");
  }
  if (Utf8Chars(query) > kMaxQueryChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("query must be at most ", kMaxQueryChars, " characters"));
  }
  if (limit < 1 || limit > 50) {
    return absl::InvalidArgumentError(absl::StrCat("limit must be 1..50, got ", limit));
  }
  Visibility v{caller.tenant, caller.project, scope, /*include_pending=*/true,
               options_.org_across_tenants};
  ASSIGN_OR_RETURN(auto ranked, Rank(v, query, std::max(limit, options_.per_ranking)));
  if (static_cast<int>(ranked.size()) > limit) ranked.resize(limit);
  std::vector<std::string> ids;
  for (const auto& [id, score] : ranked) ids.push_back(id);
  ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
  std::vector<SearchHit> hits;
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = std::find_if(ranked.begin(), ranked.end(),
                           [&](const auto& r) { return r.first == items[i].id; });
    hits.push_back({std::move(items[i]), it == ranked.end() ? 0 : it->second});
  }
  return hits;
}

absl::StatusOr<std::vector<InjectionCandidate>> MemoryBank::Retrieve(const Caller& caller,
                                                                     std::string_view query) {
  Visibility v{caller.tenant, caller.project, std::nullopt, /*include_pending=*/false,
               options_.org_across_tenants};
  ASSIGN_OR_RETURN(auto ranked, Rank(v, Utf8Head(query, kMaxQueryChars), options_.per_ranking));
  // Twice what may be injected: the greedy fit skips items too large for what is left, and each
  // candidate costs a token count.
  const size_t want = static_cast<size_t>(options_.max_items) * 2;
  std::vector<std::string> ids;
  for (const auto& [id, score] : ranked) ids.push_back(id);
  ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
  // GetMany keeps the fused order; the scope walk is a stable sort by tier.
  std::vector<MemoryItem> kept;
  for (MemoryItem& item : items) {
    if (item.status == Status::kActive && item.Confidence() >= options_.min_confidence) {
      kept.push_back(std::move(item));
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const MemoryItem& a, const MemoryItem& b) {
    return Tier(a.scope) < Tier(b.scope);
  });
  std::vector<InjectionCandidate> out;
  for (MemoryItem& item : kept) {
    if (out.size() >= want) break;
    InjectionCandidate c;
    c.text = InjectionText(item);
    c.tokens = parts_.count_tokens(c.text);
    c.item = std::move(item);
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status MemoryBank::NoteInjected(const Caller& caller, std::string_view branch_id,
                                      const std::vector<std::string>& ids, int64_t tokens) {
  if (ids.empty()) return absl::OkStatus();
  std::vector<HistoryEntry> entries;
  for (const std::string& id : ids) {
    entries.push_back(Entry(id, "injected", branch_id, absl::StrCat("into ", Sv(branch_id))));
  }
  RETURN_IF_ERROR(parts_.store->NoteUses(ids, entries));
  Emit({"memory.injected", caller.tenant, caller.project, std::string(branch_id), ids, tokens});
  return absl::OkStatus();
}

absl::StatusOr<MemoryItem> MemoryBank::GetVisible(const Caller& caller, std::string_view id) {
  ASSIGN_OR_RETURN(std::optional<MemoryItem> item, parts_.store->Get(id));
  if (!item.has_value() || !VisibleTo(*item, Visibility{caller.tenant, caller.project, std::nullopt,
                                                        true, options_.org_across_tenants})) {
    return NotFound(id);
  }
  return *std::move(item);
}

absl::StatusOr<MemoryItem> MemoryBank::Get(const Caller& caller, std::string_view id) {
  return GetVisible(caller, id);
}

absl::StatusOr<MemoryItem> MemoryBank::Signal(const Caller& caller, std::string_view id,
                                              std::string_view action, bool positive,
                                              bool is_outcome) {
  ASSIGN_OR_RETURN(MemoryItem item, GetVisible(caller, id));
  if (item.status == Status::kRetired) {
    return absl::FailedPreconditionError(absl::StrCat(
        "memory ", Sv(id), " is retired",
        item.merged_into.empty() ? "" : absl::StrCat(" (merged into ", item.merged_into, ")")));
  }
  if (is_outcome) {
    (positive ? item.success_count : item.failure_count) += 1;
  } else {
    (positive ? item.helpful_count : item.unhelpful_count) += 1;
  }
  std::vector<HistoryEntry> entries;
  entries.push_back(Entry(item.id, action, caller.actor,
                          absl::StrCat(is_outcome ? (positive ? "succeeded" : "failed")
                                                  : (positive ? "helpful" : "not helpful"),
                                       "; confidence now ", item.Confidence())));
  if (item.status == Status::kPending) {
    // Any signal confirms a candidate: someone used it and said how it went.
    item.status = Status::kActive;
    entries.push_back(Entry(item.id, "confirmed", caller.actor, std::string(action)));
  }
  item.updated_at_ms = parts_.clock->WallMillis();
  RETURN_IF_ERROR(parts_.store->Update(item, entries));
  Emit({absl::StrCat("memory.", Sv(action)), caller.tenant, caller.project, "", {item.id}, 0});
  return item;
}

absl::StatusOr<MemoryItem> MemoryBank::Feedback(const Caller& caller, std::string_view id,
                                                bool helpful) {
  return Signal(caller, id, "feedback", helpful, /*is_outcome=*/false);
}

absl::StatusOr<MemoryItem> MemoryBank::RecordOutcome(const Caller& caller, std::string_view id,
                                                     bool succeeded) {
  return Signal(caller, id, "outcome", succeeded, /*is_outcome=*/true);
}

absl::StatusOr<MemoryItem> MemoryBank::Retire(const Caller& caller, std::string_view id,
                                              std::string_view reason) {
  ASSIGN_OR_RETURN(MemoryItem item, GetVisible(caller, id));
  if (item.status == Status::kRetired) return item;
  item.status = Status::kRetired;
  item.updated_at_ms = parts_.clock->WallMillis();
  RETURN_IF_ERROR(parts_.store->Update(
      item, {Entry(item.id, "retired", caller.actor, parts_.sanitize(reason))}));
  Emit({"memory.retired", caller.tenant, caller.project, "", {item.id}, 0});
  return item;
}

absl::StatusOr<ExtractResult> MemoryBank::Extract(const BranchTrace& trace, Scope scope) {
  ExtractResult result;
  absl::StatusOr<std::vector<Candidate>> candidates = absl::UnavailableError("no model distiller");
  if (parts_.model_distiller != nullptr) {
    candidates = parts_.model_distiller->Distill(trace);
    result.distiller = parts_.model_distiller->name();
    if (!candidates.ok() || candidates->empty()) {
      result.warning =
          absl::StrCat("memory distiller ", parts_.model_distiller->name(), " failed (",
                       candidates.ok() ? "no candidates" : candidates.status().message(),
                       "); used the structural distiller");
      base::LogWarn(result.warning);
      Emit({"memory.fallback.distiller", trace.tenant, trace.project, trace.branch_id, {}, 0});
    }
  }
  if (!candidates.ok() || candidates->empty()) {
    StructuralDistiller structural;
    candidates = structural.Distill(trace);
    result.distiller = structural.name();
    RETURN_IF_ERROR(candidates.status());
  }
  if (candidates->size() > kMaxCandidates) candidates->resize(kMaxCandidates);
  Visibility v{trace.tenant, trace.project, std::nullopt, /*include_pending=*/true,
               options_.org_across_tenants};
  const std::string source_description = parts_.sanitize(trace.description);
  ASSIGN_OR_RETURN(std::vector<MemoryItem> same_task,
                   parts_.store->FindBySourceTask(v, source_description));
  const int64_t now = parts_.clock->WallMillis();
  for (Candidate& c : *candidates) {
    MemoryItem item;
    item.tenant = trace.tenant;
    item.project = trace.project;
    item.title = std::string(Utf8Head(parts_.sanitize(c.title), kMaxTitleChars));
    item.description = std::string(Utf8Head(parts_.sanitize(c.description), kMaxDescriptionChars));
    item.content = std::string(Utf8Head(parts_.sanitize(c.content), kMaxContentChars));
    for (std::string& tag : c.tags) {
      if (item.tags.size() < kMaxTags) {
        item.tags.push_back(std::string(Utf8Head(parts_.sanitize(tag), kMaxTagChars)));
      }
    }
    item.outcome = c.outcome;
    if (!ValidateFields(item).ok()) continue;  // a distiller's blank item is no memory
    // A near-duplicate of the same task (and outcome) absorbs the candidate: one memory, with
    // the evidence that it came up again.
    auto dup = std::find_if(same_task.begin(), same_task.end(), [&](const MemoryItem& old) {
      return old.status != Status::kRetired && old.outcome == item.outcome &&
             WordOverlap(absl::StrCat(old.title, " ", old.content),
                         absl::StrCat(item.title, " ", item.content)) >= options_.merge_overlap;
    });
    if (dup != same_task.end()) {
      dup->updated_at_ms = now;
      RETURN_IF_ERROR(
          parts_.store->Update(*dup, {Entry(dup->id, "merged", trace.branch_id,
                                            absl::StrCat("candidate from ", trace.branch_id, ": ",
                                                         item.title, ": ", item.content))}));
      result.merged.push_back(*dup);
      continue;
    }
    item.id = base::TimeOrderedId("mem_");
    item.scope = scope;
    item.source = {trace.branch_id, source_description, parts_.sanitize(trace.prompt)};
    item.status = options_.auto_confirm ? Status::kActive : Status::kPending;
    item.origin = result.distiller == "structural" ? "extracted" : "distilled";
    item.created_at_ms = item.updated_at_ms = now;
    RETURN_IF_ERROR(parts_.store->Insert(
        item, Entry(item.id, "extracted", trace.branch_id,
                    absl::StrCat("by ", result.distiller, trace.succeeded ? "" : " (failed branch)",
                                 options_.auto_confirm ? "; auto-confirmed" : "; pending"))));
    Index(item);
    same_task.push_back(item);
    result.stored.push_back(std::move(item));
  }
  MemoryEvent event{"memory.extracted", trace.tenant, trace.project, trace.branch_id, {}, 0};
  for (const MemoryItem& item : result.stored) event.memory_ids.push_back(item.id);
  for (const MemoryItem& item : result.merged) event.memory_ids.push_back(item.id);
  Emit(std::move(event));
  return result;
}

absl::Status MemoryBank::Import(MemoryItem item, std::string_view actor) {
  if (item.id.rfind("mem_", 0) != 0 || item.id.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("id must start with mem_, got \"", Sv(Utf8Head(item.id, 64)), "\""));
  }
  RETURN_IF_ERROR(ValidateFields(item));
  for (std::string* text : {&item.title, &item.description, &item.content, &item.source.description,
                            &item.source.prompt}) {
    *text = parts_.sanitize(*text);
  }
  for (std::string& tag : item.tags) tag = parts_.sanitize(tag);
  if (item.origin.empty()) item.origin = "imported";
  if (item.created_at_ms == 0) item.created_at_ms = parts_.clock->WallMillis();
  item.updated_at_ms = parts_.clock->WallMillis();
  RETURN_IF_ERROR(parts_.store->Insert(item, Entry(item.id, "imported", actor, "")));
  Index(item);
  return absl::OkStatus();
}

absl::StatusOr<size_t> MemoryBank::LoadVectors() {
  if (parts_.embedder == nullptr || parts_.vectors == nullptr) return 0;
  ASSIGN_OR_RETURN(auto stored, parts_.store->AllVectors(parts_.embedder->model()));
  std::set<std::string> have;
  for (const auto& sv : stored) {
    RETURN_IF_ERROR(parts_.vectors->Add(sv.id, sv.vector));
    have.insert(sv.id);
  }
  size_t added = 0;
  ListFilter filter;
  filter.limit = 500;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<MemoryItem> page, parts_.store->List(filter));
    for (const MemoryItem& item : page) {
      if (item.status != Status::kRetired && have.count(item.id) == 0) {
        Index(item);
        ++added;
      }
    }
    if (static_cast<int>(page.size()) < filter.limit) break;
    filter.after_id = page.back().id;
  }
  return have.size() + added;
}

}  // namespace contextd::memory
