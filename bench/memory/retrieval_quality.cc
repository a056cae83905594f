// retrieval_quality: the ReasoningBank on the recorded SWE-bench runs (issue 18). Reads the set
// retrieval_quality.mjs writes (the replay benchmark's segments, each with the BranchTrace fields
// and the repository files its commands touch) and measures, through the bank's real paths
// (MemoryBank::Extract with the structural distiller, Retrieve, the store's two BM25 rankings):
//  - the extraction rate (SC-003): segments of submitted runs that yield a confirmed item, with
//    auto_confirm off and no signal, with the run's outcome as the signal, and with auto_confirm;
//  - retrieval quality, leave-one-run-out: memories from the other runs, queries from the held-out
//    run's segments, relevant = same repository and a common touched file (or directory);
//    recall@5, MRR@10 and "nothing relevant in the top 10" per ranking, plus what-ifs (no
//    postings budget or term cap; porter stemming) and the random ranking's expectation.
// Usage: retrieval_quality SET.json [--dir DIR] [--examples N]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "bench/memory/bench_support.h"
#include "bench/memory/raw_search.h"
#include "memory/memory_bank.h"
#include "nlohmann/json.hpp"
#include "store/sqlite/sqlite_memory_store.h"

namespace contextd::bench {
namespace {

using memory::BranchTrace;
using memory::Scope;

constexpr char kTenant[] = "swebench";

struct Segment {
  std::string id, run, repo, exit_status, kind, description, prompt, summary;
  std::set<std::string> files, dirs;
  std::vector<memory::TraceEvent> events;

  bool submitted() const { return exit_status == "Submitted"; }
  std::string query() const { return absl::StrCat(description, "\n", prompt); }
};

struct Run {
  std::string id, repo;
};

bool LoadSet(const std::string& path, std::vector<Run>& runs, std::vector<Segment>& segments) {
  std::ifstream in(path);
  if (!in) return false;
  nlohmann::json set = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (set.is_discarded() || !set.contains("runs") || !set.contains("segments")) return false;
  for (const auto& r : set["runs"]) runs.push_back({r.value("id", ""), r.value("repo", "")});
  for (const auto& s : set["segments"]) {
    Segment seg;
    seg.id = s.value("id", "");
    seg.run = s.value("run", "");
    seg.repo = s.value("repo", "");
    seg.exit_status = s.value("exit_status", "");
    seg.kind = s.value("kind", "");
    seg.description = s.value("description", "");
    seg.prompt = s.value("prompt", "");
    seg.summary = s.value("summary", "");
    for (const auto& f : s.value("files", nlohmann::json::array())) {
      const std::string file = f.get<std::string>();
      seg.files.insert(file);
      seg.dirs.insert(file.substr(0, file.rfind('/')));
    }
    for (const auto& e : s.value("events", nlohmann::json::array())) {
      seg.events.push_back({e.value("kind", ""), e.value("label", ""), e.value("text", ""),
                            e.value("is_error", false)});
    }
    segments.push_back(std::move(seg));
  }
  return true;
}

// The finished branch a segment stands for. Every segment was closed by branch_return in the
// replay (none force-returned), so each one succeeded as a branch.
BranchTrace TraceOf(const Segment& s) {
  BranchTrace t;
  t.tenant = kTenant;
  t.project = s.repo;
  t.session_id = s.run;
  t.branch_id = absl::StrCat("seg:", s.id);
  t.description = s.description;
  t.prompt = s.prompt;
  t.summary = s.summary;
  t.succeeded = true;
  t.finish_reason = "branch_return";
  t.events = s.events;
  return t;
}

struct Bank {
  std::unique_ptr<store::SqliteMemoryStore> store;
  std::unique_ptr<memory::MemoryBank> bank;
};

Bank OpenBank(const BankParts& parts, const std::string& path, bool auto_confirm) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  auto store = store::SqliteMemoryStore::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "retrieval_quality: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  memory::BankOptions options;
  options.auto_confirm = auto_confirm;
  Bank b;
  b.store = *std::move(store);
  b.bank = std::make_unique<memory::MemoryBank>(parts.For(b.store.get()), options);
  return b;
}

// ---- Extraction rate (SC-003) ----

void Extraction(const BankParts& parts, const std::string& dir,
                const std::vector<Segment>& segments) {
  struct Mode {
    const char* name;
    bool auto_confirm;
    bool outcome_signal;
  };
  const Mode modes[] = {{"auto_confirm off, no signal", false, false},
                        {"auto_confirm off, outcome signal (RecordOutcome true)", false, true},
                        {"auto_confirm on", true, false}};
  std::printf("\n## Extraction rate (SC-003): %zu segments of %zu runs, structural distiller\n\n",
              segments.size(),
              std::set<std::string>([&] {
                std::set<std::string> r;
                for (const auto& s : segments) r.insert(s.run);
                return r;
              }())
                  .size());
  std::printf(
      "| mode | successful segments | with >= 1 confirmed item | rate | with only pending "
      "items | 0 new items: merged | 0 new items: none valid | items stored (active / "
      "pending) | merges |\n|---|---|---|---|---|---|---|---|---|\n");
  std::map<size_t, int> candidates_per_segment;
  std::vector<std::string> merged_segments;
  for (const Mode& mode : modes) {
    Bank b = OpenBank(parts, dir + "/extraction.db", mode.auto_confirm);
    int successful = 0, confirmed = 0, pending_only = 0, merged_only = 0, none_valid = 0;
    int active_items = 0, pending_items = 0, merges = 0, errors = 0;
    for (const Segment& s : segments) {
      auto r = b.bank->Extract(TraceOf(s), Scope::kProject);
      if (!r.ok()) {
        ++errors;
        std::fprintf(stderr, "extract %s: %s\n", s.id.c_str(), r.status().ToString().c_str());
        continue;
      }
      if (mode.auto_confirm) {
        ++candidates_per_segment[r->stored.size() + r->merged.size()];
        for (const memory::MemoryItem& into : r->merged) {
          merged_segments.push_back(
              absl::StrCat(s.id, " (\"", s.description, "\") into ", into.source.branch_id));
        }
      }
      merges += static_cast<int>(r->merged.size());
      int seg_active = 0, seg_pending = 0;
      for (const memory::MemoryItem& item : r->stored) {
        memory::Status status = item.status;
        if (mode.outcome_signal && s.submitted()) {
          memory::Caller caller{kTenant, s.repo, s.run};
          auto after = b.bank->RecordOutcome(caller, item.id, true);
          if (after.ok()) status = after->status;
        }
        (status == memory::Status::kActive ? seg_active : seg_pending) += 1;
      }
      active_items += seg_active;
      pending_items += seg_pending;
      if (!s.submitted()) continue;
      ++successful;
      if (seg_active > 0) {
        ++confirmed;
      } else if (seg_pending > 0) {
        ++pending_only;
      } else if (!r->merged.empty()) {
        ++merged_only;
      } else {
        ++none_valid;
      }
    }
    std::printf("| %s | %d | %d | %.1f%% | %d | %d | %d | %d / %d | %d |\n", mode.name, successful,
                confirmed, successful > 0 ? 100.0 * confirmed / successful : 0.0, pending_only,
                merged_only, none_valid, active_items, pending_items, merges);
    if (errors > 0) std::printf("(%d Extract errors)\n", errors);
  }
  std::printf("\ncandidates per segment (stored + merged, auto_confirm on):");
  for (const auto& [n, count] : candidates_per_segment) std::printf(" %zu: %d;", n, count);
  std::printf("\n");
  for (const std::string& m : merged_segments) std::printf("merged: %s\n", m.c_str());
}

// ---- Retrieval quality ----

enum class Condition { kOwnRepo, kAllProjectScoped, kAllVisible };
constexpr Condition kConditions[] = {Condition::kOwnRepo, Condition::kAllProjectScoped,
                                     Condition::kAllVisible};
const char* ConditionName(Condition c) {
  switch (c) {
    case Condition::kOwnRepo:
      return "own repository only";
    case Condition::kAllProjectScoped:
      return "all repositories stored, project scope (others invisible)";
    case Condition::kAllVisible:
      return "all repositories visible (team scope): distractors";
  }
  return "";
}

enum class Label { kFile, kDir };
constexpr Label kLabels[] = {Label::kFile, Label::kDir};

const char* const kRankings[] = {
    "(a) BM25 over item text (SearchContent)",
    "(b) BM25 over source tasks (SearchTasks)",
    "(c) fusion as the bank (Retrieve)",
    "what-if: (c) without budget or term cap (<= 64 terms)",
    "what-if: (c) porter-stemmed, without budget or cap",
    "random ranking (expectation)",
};
constexpr size_t kRankingCount = sizeof(kRankings) / sizeof(kRankings[0]);
constexpr size_t kRandom = kRankingCount - 1;

struct Score {
  double recall5 = 0, mrr10 = 0, miss10 = 0;
  int queries = 0;
  int better = 0, worse = 0;  // queries whose reciprocal rank beats / trails the bank's (c)
  double top10 = 0, top10_foreign = 0;  // items in the top 10, and those of other repositories
};

struct Tally {
  int queries = 0, with_files = 0, with_relevant = 0, retrieve_differs = 0;
  std::vector<double> query_words;
  double relevant_sum = 0, visible_sum = 0;
  Score scores[kRankingCount];
};

bool Overlaps(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& x : a) {
    if (b.count(x) > 0) return true;
  }
  return false;
}

// Adds one query's numbers; returns its reciprocal rank (0 if nothing relevant in the top 10).
double AddScore(Score& s, const std::vector<std::string>& ranked, const std::set<std::string>& rel,
                const std::map<std::string, const Segment*>& source, const std::string& repo) {
  for (size_t i = 0; i < ranked.size() && i < 10; ++i) {
    auto it = source.find(ranked[i]);
    s.top10 += 1;
    s.top10_foreign += it != source.end() && it->second->repo != repo ? 1 : 0;
  }
  int in5 = 0;
  double rr = 0;
  bool any10 = false;
  for (size_t i = 0; i < ranked.size() && i < 10; ++i) {
    if (rel.count(ranked[i]) == 0) continue;
    if (i < 5) ++in5;
    if (!any10) rr = 1.0 / static_cast<double>(i + 1);
    any10 = true;
  }
  s.recall5 += static_cast<double>(in5) / static_cast<double>(rel.size());
  s.mrr10 += rr;
  s.miss10 += any10 ? 0 : 1;
  ++s.queries;
  return rr;
}

// The same three numbers for a uniformly random order of `n` visible items, `r` of them relevant.
void AddRandom(Score& s, size_t n, size_t r) {
  if (n == 0 || r == 0) return;
  s.recall5 += static_cast<double>(std::min<size_t>(5, n)) / static_cast<double>(n);
  // P(first relevant at rank k) = C(n-k, r-1) / C(n, r); P(none in the top 10) = C(n-r,10)/C(n,10).
  double none_before = 1.0, rr = 0;  // none_before: P(no relevant in ranks 1..k-1)
  for (size_t k = 1; k <= 10 && k <= n; ++k) {
    const double p_here = static_cast<double>(r) / static_cast<double>(n - k + 1);
    rr += none_before * p_here / static_cast<double>(k);
    none_before *= 1.0 - p_here;
    if (r > n - k) none_before = 0;
  }
  s.mrr10 += rr;
  s.miss10 += none_before;
  ++s.queries;
}

std::vector<std::string> Ids(const std::vector<memory::Ranked>& ranked) {
  std::vector<std::string> ids;
  for (const memory::Ranked& r : ranked) ids.push_back(r.id);
  return ids;
}

struct Example {
  std::string query, kept, top;
};

void Quality(const BankParts& parts, const std::string& dir, const std::vector<Run>& runs,
             const std::vector<Segment>& segments, int examples) {
  std::map<std::string, int> runs_per_repo;
  for (const Run& r : runs) ++runs_per_repo[r.repo];
  std::map<std::pair<Condition, Label>, Tally> tallies;
  std::vector<Example> missed;
  int folds = 0;
  for (const Run& held_out : runs) {
    if (runs_per_repo[held_out.repo] < 2) continue;  // nothing of its repository to find
    ++folds;
    for (Condition cond : kConditions) {
      Bank b = OpenBank(parts, dir + "/fold.db", /*auto_confirm=*/true);
      const Scope scope = cond == Condition::kAllVisible ? Scope::kTeam : Scope::kProject;
      std::map<std::string, const Segment*> source;  // memory id -> its segment
      for (const Segment& s : segments) {
        if (s.run == held_out.id) continue;
        if (cond == Condition::kOwnRepo && s.repo != held_out.repo) continue;
        auto r = b.bank->Extract(TraceOf(s), scope);
        if (!r.ok()) {
          std::fprintf(stderr, "extract %s: %s\n", s.id.c_str(), r.status().ToString().c_str());
          std::exit(1);
        }
        for (const memory::MemoryItem& item : r->stored) source[item.id] = &s;
      }
      auto whatif = WhatIfIndex::Open(dir + "/fold.db");
      absl::Status built = whatif.ok() ? (*whatif)->BuildStemmed() : whatif.status();
      if (!built.ok()) {
        std::fprintf(stderr, "retrieval_quality: what-if index: %s\n", built.ToString().c_str());
        std::exit(1);
      }
      // Items the held-out run's caller can see.
      std::vector<const Segment*> visible;
      for (const auto& [id, s] : source) {
        if (cond != Condition::kAllProjectScoped || s->repo == held_out.repo) visible.push_back(s);
      }
      for (const Segment& q : segments) {
        if (q.run != held_out.id) continue;
        const std::string text = q.query();
        const memory::Caller caller{kTenant, q.repo, q.run};
        const memory::Visibility v{kTenant, q.repo, std::nullopt, false};
        const std::vector<std::string> terms = memory::QueryTerms(text);
        auto content = b.store->SearchContent(v, terms, 50);
        auto tasks = b.store->SearchTasks(v, terms, 50);
        auto retrieved = b.bank->Retrieve(caller, text);
        SearchSpec spec{Field::kContent, Stemming::kNone, DfSource::kNone, kNoBudget, 64, 50};
        auto wc = (*whatif)->Search(spec, v, terms);
        spec.field = Field::kTasks;
        auto wt = (*whatif)->Search(spec, v, terms);
        spec.stemming = Stemming::kPorter;
        auto pt = (*whatif)->Search(spec, v, terms);
        spec.field = Field::kContent;
        auto pc = (*whatif)->Search(spec, v, terms);
        if (!content.ok() || !tasks.ok() || !retrieved.ok() || !wc.ok() || !wt.ok() || !pc.ok() ||
            !pt.ok()) {
          std::fprintf(stderr, "retrieval_quality: query %s failed\n", q.id.c_str());
          std::exit(1);
        }
        std::vector<std::string> injected;
        for (const auto& c : *retrieved) injected.push_back(c.item.id);
        const std::vector<std::string> fused = Fuse({*content, *tasks});
        const std::vector<std::vector<std::string>> lists = {Ids(*content), Ids(*tasks), injected,
                                                             Fuse({*wc, *wt}), Fuse({*pc, *pt})};
        for (Label label : kLabels) {
          Tally& t = tallies[{cond, label}];
          ++t.queries;
          t.query_words.push_back(static_cast<double>(terms.size()));
          if (q.files.empty()) continue;
          ++t.with_files;
          std::set<std::string> rel;
          for (const auto& [id, s] : source) {
            const bool seen = cond != Condition::kAllProjectScoped || s->repo == q.repo;
            if (seen && s->repo == q.repo &&
                Overlaps(label == Label::kFile ? q.files : q.dirs,
                         label == Label::kFile ? s->files : s->dirs)) {
              rel.insert(id);
            }
          }
          if (rel.empty()) continue;
          ++t.with_relevant;
          t.relevant_sum += static_cast<double>(rel.size());
          t.visible_sum += static_cast<double>(visible.size());
          if (std::vector<std::string>(
                  fused.begin(), fused.begin() + std::min<size_t>(fused.size(), 30)) != injected) {
            ++t.retrieve_differs;
          }
          double rr[kRankingCount] = {};
          for (size_t k = 0; k < lists.size(); ++k) {
            rr[k] = AddScore(t.scores[k], lists[k], rel, source, q.repo);
          }
          for (size_t k = 0; k < lists.size(); ++k) {
            t.scores[k].better += rr[k] > rr[2] ? 1 : 0;
            t.scores[k].worse += rr[k] < rr[2] ? 1 : 0;
          }
          AddRandom(t.scores[kRandom], visible.size(), rel.size());
          const bool miss = std::none_of(injected.begin(),
                                         injected.begin() + std::min<size_t>(injected.size(), 10),
                                         [&](const std::string& id) { return rel.count(id) > 0; });
          if (miss && label == Label::kFile && cond == Condition::kAllVisible &&
              static_cast<int>(missed.size()) < examples) {
            TermStats ts;
            SearchSpec store_like{Field::kContent,        Stemming::kNone,       DfSource::kVocab,
                                  store::kPostingsBudget, store::kMaxQueryTerms, 50};
            (void)(*whatif)->Search(store_like, v, terms, &ts);
            std::vector<std::string> tops;
            for (size_t i = 0; i < injected.size() && i < 3; ++i) {
              const Segment* s = source.count(injected[i]) ? source[injected[i]] : nullptr;
              tops.push_back(s == nullptr ? injected[i]
                                          : absl::StrCat(s->id, " \"", s->description, "\""));
            }
            std::string files = absl::StrJoin(q.files, " ");
            missed.push_back(
                {absl::StrCat(q.id, " [", files, "]: ", std::string(memory::Utf8Head(text, 200))),
                 absl::StrCat(ts.kept, " of ", ts.known,
                              " known content terms kept: ", absl::StrJoin(ts.kept_terms, " ")),
                 absl::StrJoin(tops, "; ")});
          }
        }
      }
    }
  }

  std::printf(
      "\n## Retrieval quality: leave-one-run-out over %d held-out runs (repositories with "
      ">= 2 runs)\n",
      folds);
  for (Label label : kLabels) {
    for (Condition cond : kConditions) {
      const Tally& t = tallies[{cond, label}];
      std::printf("\n### %s; relevant = same repository and a common touched %s\n\n",
                  ConditionName(cond), label == Label::kFile ? "file" : "directory");
      const Quantiles qt = Summarize(t.query_words);
      std::printf(
          "queries %d (QueryTerms per query: median %.0f, p95 %.0f), with touched files "
          "%d, with >= 1 relevant memory %d (mean %.1f relevant of %.0f visible); "
          "Retrieve's order differs from the re-stated fusion in %d\n\n",
          t.queries, qt.p50, qt.p95, t.with_files, t.with_relevant,
          t.with_relevant ? t.relevant_sum / t.with_relevant : 0.0,
          t.with_relevant ? t.visible_sum / t.with_relevant : 0.0, t.retrieve_differs);
      std::printf(
          "| ranking | recall@5 | MRR@10 | nothing relevant in top 10 | RR better / "
          "worse than (c) | top-10 items from other repositories |\n"
          "|---|---|---|---|---|---|\n");
      for (size_t k = 0; k < kRankingCount; ++k) {
        const Score& s = t.scores[k];
        const double n = s.queries > 0 ? s.queries : 1;
        std::printf("| %s | %.3f | %.3f | %.1f%% |", kRankings[k], s.recall5 / n, s.mrr10 / n,
                    100.0 * s.miss10 / n);
        if (k == kRandom) {
          std::printf(" | |\n");
        } else {
          std::printf(" %d / %d | %.0f%% |\n", s.better, s.worse,
                      s.top10 > 0 ? 100.0 * s.top10_foreign / s.top10 : 0.0);
        }
      }
    }
  }
  if (!missed.empty()) {
    std::printf(
        "\nExamples of queries whose top 10 had nothing relevant (all repositories "
        "visible, file label):\n");
    for (const Example& e : missed) {
      std::printf("- %s\n  [%s; top 3 from: %s]\n", e.query.c_str(), e.kept.c_str(), e.top.c_str());
    }
  }
}

}  // namespace
}  // namespace contextd::bench

int main(int argc, char** argv) {
  using namespace contextd::bench;  // NOLINT(google-build-using-namespace): main only
  std::string set_path, dir;
  int examples = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--examples" && i + 1 < argc) {
      examples = std::atoi(argv[++i]);
    } else if (!a.empty() && a[0] != '-' && set_path.empty()) {
      set_path = a;
    } else {
      std::fprintf(stderr, "usage: retrieval_quality SET.json [--dir DIR] [--examples N]\n");
      return 2;
    }
  }
  if (set_path.empty() || !std::filesystem::exists(set_path)) {
    std::printf(
        "retrieval_quality: skipped: no labelled set (%s); write it with "
        "bench/memory/retrieval_quality.mjs (needs ../shared/workloads)\n",
        set_path.empty() ? "none given" : set_path.c_str());
    return 0;
  }
  contextd::base::InitLogging(contextd::base::LogLevel::kError);
  std::vector<Run> runs;
  std::vector<Segment> segments;
  if (!LoadSet(set_path, runs, segments)) {
    std::fprintf(stderr, "retrieval_quality: %s: not a set written by retrieval_quality.mjs\n",
                 set_path.c_str());
    return 1;
  }
  if (dir.empty()) {
    dir = (std::filesystem::temp_directory_path() / "contextd-retrieval-quality").string();
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  BankParts parts;
  Extraction(parts, dir, segments);
  Quality(parts, dir, runs, segments, examples);
  std::filesystem::remove_all(dir);
  return 0;
}
