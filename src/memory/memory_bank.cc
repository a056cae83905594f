#include "memory/memory_bank.h"

#include <algorithm>
#include <map>
#include <set>
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

absl::Status MemoryBank::AddVectorScores(const Visibility& v, std::string_view query,
                                         std::map<std::string, double>& scores) {
  // The query leaves the process: scrubbed first, as every text the bank sends or stores (a
  // memory_search query is the agent's own text).
  auto q = parts_.embedder->Embed({parts_.sanitize(query)});
  if (!q.ok() || q->size() != 1) {
    base::LogWarn(absl::StrCat("memory: query embedding failed (BM25 only): ",
                               q.ok() ? "no vector" : q.status().message()));
    Emit({"memory.fallback.embeddings", v.tenant, v.project, "", {}, 0});
    return absl::OkStatus();
  }
  const int depth = options_.per_ranking;
  // The index holds every tenant's vectors: read deeper, visibility is checked on the items.
  auto near = parts_.vectors->Nearest((*q)[0], depth * 4);
  if (!near.ok()) return absl::OkStatus();
  std::vector<std::string> ids;
  for (const Neighbour& n : *near) ids.push_back(n.id);
  ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
  int rank = 0;
  for (const MemoryItem& item : items) {
    const bool status_ok =
        item.status == Status::kActive || (v.include_pending && item.status == Status::kPending);
    if (!status_ok || !VisibleTo(item, v) || (v.scope && item.scope != *v.scope)) continue;
    scores[item.id] += options_.vector_weight * (1.0 - static_cast<double>(rank) / depth);
    if (++rank >= depth) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MemoryBank::Scored>> MemoryBank::Rank(const Visibility& v,
                                                                 std::string_view query) {
  std::vector<std::string> terms = QueryTerms(query);
  std::map<std::string, double> scores;
  std::set<std::string> own;
  if (!terms.empty()) {
    ASSIGN_OR_RETURN(Matches found, parts_.store->FindMatches(v, terms, options_.max_matches));
    const std::vector<double> score_of = ScoreMatches(terms, found, options_.weights);
    for (size_t i = 0; i < found.items.size(); ++i) {
      const Match& m = found.items[i];
      const double score = score_of[i];
      if (score <= 0) continue;
      scores[m.id] = score;
      if (m.tenant == v.tenant && m.project == v.project) own.insert(m.id);
    }
  }
  if (parts_.embedder != nullptr && parts_.vectors != nullptr && parts_.vectors->size() > 0) {
    RETURN_IF_ERROR(AddVectorScores(v, query, scores));
  }
  std::vector<Scored> out;
  out.reserve(scores.size());
  for (const auto& [id, score] : scores) out.push_back({id, score, own.count(id) > 0});
  std::sort(out.begin(), out.end(), [](const Scored& a, const Scored& b) {
    if (a.own_project != b.own_project) return a.own_project;
    return a.score != b.score ? a.score > b.score : a.id < b.id;
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
  ASSIGN_OR_RETURN(std::vector<Scored> ranked, Rank(v, query));
  if (static_cast<int>(ranked.size()) > limit) ranked.resize(limit);
  std::vector<std::string> ids;
  for (const Scored& r : ranked) ids.push_back(r.id);
  ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
  std::vector<SearchHit> hits;
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = std::find_if(ranked.begin(), ranked.end(),
                           [&](const Scored& r) { return r.id == items[i].id; });
    hits.push_back({std::move(items[i]), it == ranked.end() ? 0 : it->score});
  }
  return hits;
}

absl::StatusOr<std::vector<InjectionCandidate>> MemoryBank::Retrieve(const Caller& caller,
                                                                     std::string_view query) {
  Visibility v{caller.tenant, caller.project, std::nullopt, /*include_pending=*/false,
               options_.org_across_tenants};
  ASSIGN_OR_RETURN(std::vector<Scored> ranked, Rank(v, Utf8Head(query, kMaxQueryChars)));
  // The floors: nothing below injection_floor, other projects' items from other_project_floor.
  ranked.erase(std::remove_if(ranked.begin(), ranked.end(),
                              [&](const Scored& r) {
                                return r.score < options_.injection_floor ||
                                       (!r.own_project && r.score < options_.other_project_floor);
                              }),
               ranked.end());
  // Twice what may be injected: the greedy fit skips items too large for what is left, and each
  // candidate costs a token count. Items are read a batch at a time: most pass the confidence
  // threshold, so one batch usually does.
  const size_t want = static_cast<size_t>(options_.max_items) * 2;
  std::vector<InjectionCandidate> out;
  for (size_t from = 0; from < ranked.size() && out.size() < want; from += want) {
    std::vector<std::string> ids;
    for (size_t i = from; i < ranked.size() && i < from + want; ++i) ids.push_back(ranked[i].id);
    ASSIGN_OR_RETURN(std::vector<MemoryItem> items, parts_.store->GetMany(ids));
    for (size_t i = 0; i < items.size() && out.size() < want; ++i) {  // GetMany keeps the order
      MemoryItem& item = items[i];
      if (item.status != Status::kActive || item.Confidence() < options_.min_confidence) continue;
      const Scored& r =
          *std::find_if(ranked.begin() + static_cast<std::ptrdiff_t>(from), ranked.end(),
                        [&](const Scored& s) { return s.id == item.id; });
      InjectionCandidate c;
      c.text = InjectionText(item);
      c.tokens = parts_.count_tokens(c.text);
      c.score = r.score;
      c.own_project = r.own_project;
      c.item = std::move(item);
      out.push_back(std::move(c));
    }
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
