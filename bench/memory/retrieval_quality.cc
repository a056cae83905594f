// retrieval_quality: the ReasoningBank on the recorded SWE-bench runs (issue 18). Reads the set
// retrieval_quality.mjs writes (the replay benchmark's segments, each with the BranchTrace fields
// and the repository files its commands touch) and measures, through the bank's real paths
// (MemoryBank::Extract with the structural distiller, Retrieve):
//  - the extraction rate (SC-003): segments of submitted runs that yield a confirmed item, with
//    auto_confirm off and no signal, with the run's outcome as the signal, and with auto_confirm;
//  - retrieval quality, leave-one-run-out: memories from the other runs, queries from the held-out
//    run's segments, relevant = same repository and a common touched file (or directory);
//    recall@5, MRR@10, "nothing relevant injected" (an empty injection counts), precision of what
//    is injected, on a tuning and a held-out split of the runs (TuningRun), with the shipped
//    BankOptions' floors and without them, and the random ranking's expectation. --grid adds the
//    tuning grid (task weight x floors) on the tuning split.
// Usage: retrieval_quality SET.json [--dir DIR] [--grid]
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

// The split of the runs: tuning when the FNV-1a 64-bit hash of the run id is even, held-out when
// odd. Options are tuned on the tuning split only; the held-out split is reported as measured.
bool TuningRun(const std::string& run) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : run) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h % 2 == 0;
}

// One ranked candidate as Retrieve returned it with no floors: what the floors then filter.
struct Ranked {
  std::string id;
  double score;
  bool own;
};

struct Score {
  double recall5 = 0, mrr10 = 0, miss10 = 0, empty = 0;
  double injected = 0, injected_relevant = 0, injected_foreign = 0;
  int queries = 0;
  int unanswerable = 0, unanswerable_empty = 0;  // with files, nothing relevant stored
};

bool Overlaps(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const std::string& x : a) {
    if (b.count(x) > 0) return true;
  }
  return false;
}

// The top 10 of `ranked` that pass the floors (what Retrieve injects at most, max_items 10).
std::vector<const Ranked*> Injected(const std::vector<Ranked>& ranked, double floor,
                                    double other_floor) {
  std::vector<const Ranked*> out;
  for (const Ranked& r : ranked) {
    if (r.score < floor || (!r.own && r.score < other_floor)) continue;
    out.push_back(&r);
    if (out.size() == 10) break;
  }
  return out;
}

void AddScore(Score& s, const std::vector<const Ranked*>& top, const std::set<std::string>& rel) {
  int in5 = 0;
  double rr = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    s.injected += 1;
    s.injected_foreign += top[i]->own ? 0 : 1;
    if (rel.count(top[i]->id) == 0) continue;
    s.injected_relevant += 1;
    if (i < 5) ++in5;
    if (rr == 0) rr = 1.0 / static_cast<double>(i + 1);
  }
  s.recall5 += static_cast<double>(in5) / static_cast<double>(rel.size());
  s.mrr10 += rr;
  s.miss10 += rr == 0 ? 1 : 0;
  s.empty += top.empty() ? 1 : 0;
  ++s.queries;
}

// The same numbers for a uniformly random order of `n` visible items, `r` of them relevant.
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

// One labelled query of one fold: the relevant ids and, per ranking variant, what Retrieve ranked.
struct QueryResult {
  bool tuning = false;
  bool has_files = false;
  std::set<std::string> rel[2];  // by Label
  size_t visible = 0;
  std::vector<std::vector<Ranked>> ranked;  // by variant
};

// The variants measured: the shipped options' ranking, and task weights for the tuning grid.
struct Variant {
  std::string name;
  double task_weight;
};

std::vector<Variant> Variants(const memory::BankOptions& shipped, bool grid) {
  std::vector<Variant> v = {{"shipped", shipped.weights.task_weight}};
  if (grid) {
    for (double w : {0.0, 0.25, 0.5, 1.0}) v.push_back({absl::StrCat("task_weight ", w), w});
  }
  return v;
}

std::vector<Ranked> RankAll(memory::MemoryBank& bank, const memory::Caller& caller,
                            const std::string& text) {
  auto got = bank.Retrieve(caller, text);
  if (!got.ok()) {
    std::fprintf(stderr, "retrieval_quality: Retrieve: %s\n", got.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<Ranked> out;
  for (const auto& c : *got) out.push_back({c.item.id, c.score, c.own_project});
  return out;
}

std::map<Condition, std::vector<QueryResult>> RunFolds(const BankParts& parts,
                                                       const std::string& dir,
                                                       const std::vector<Run>& runs,
                                                       const std::vector<Segment>& segments,
                                                       const std::vector<Variant>& variants) {
  std::map<std::string, int> runs_per_repo;
  for (const Run& r : runs) ++runs_per_repo[r.repo];
  std::map<Condition, std::vector<QueryResult>> results;
  for (const Run& held_out : runs) {
    if (runs_per_repo[held_out.repo] < 2) continue;  // nothing of its repository to find
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
      std::vector<std::unique_ptr<memory::MemoryBank>> banks;
      for (const Variant& v : variants) {
        memory::BankOptions o;
        o.auto_confirm = true;
        o.injection_floor = 0;
        o.other_project_floor = 0;
        o.max_items = 1000;  // every candidate, ranked; the floors and the top 10 come after
        o.weights.task_weight = v.task_weight;
        banks.push_back(std::make_unique<memory::MemoryBank>(parts.For(b.store.get()), o));
      }
      for (const Segment& q : segments) {
        if (q.run != held_out.id) continue;
        QueryResult r;
        r.tuning = TuningRun(q.run);
        r.has_files = !q.files.empty();
        for (const auto& [id, s] : source) {
          const bool seen = cond != Condition::kAllProjectScoped || s->repo == q.repo;
          if (!seen) continue;
          ++r.visible;
          if (s->repo != q.repo) continue;
          if (Overlaps(q.files, s->files)) r.rel[0].insert(id);
          if (Overlaps(q.dirs, s->dirs)) r.rel[1].insert(id);
        }
        const memory::Caller caller{kTenant, q.repo, q.run};
        for (auto& bank : banks) r.ranked.push_back(RankAll(*bank, caller, q.query()));
        results[cond].push_back(std::move(r));
      }
    }
  }
  return results;
}

Score Evaluate(const std::vector<QueryResult>& results, bool tuning, Label label, size_t variant,
               double floor, double other_floor) {
  Score s;
  const int l = label == Label::kFile ? 0 : 1;
  for (const QueryResult& r : results) {
    if (r.tuning != tuning || !r.has_files) continue;
    auto top = Injected(r.ranked[variant], floor, other_floor);
    if (r.rel[l].empty()) {
      ++s.unanswerable;
      s.unanswerable_empty += top.empty() ? 1 : 0;
      continue;
    }
    AddScore(s, top, r.rel[l]);
  }
  return s;
}

Score Random(const std::vector<QueryResult>& results, bool tuning, Label label) {
  Score s;
  const int l = label == Label::kFile ? 0 : 1;
  for (const QueryResult& r : results) {
    if (r.tuning == tuning && r.has_files) AddRandom(s, r.visible, r.rel[l].size());
  }
  return s;
}

void PrintRow(const std::string& name, const Score& s, bool random = false) {
  const double n = s.queries > 0 ? s.queries : 1;
  std::printf("| %s | %d | %.3f | %.3f | %.1f%% |", name.c_str(), s.queries, s.recall5 / n,
              s.mrr10 / n, 100.0 * s.miss10 / n);
  if (random) {
    std::printf(" | | | |\n");
    return;
  }
  std::printf(" %.1f%% | %.2f | %.0f%% | %d / %d |\n", 100.0 * s.empty / n,
              s.injected > 0 ? s.injected_relevant / s.injected : 0.0,
              s.injected > 0 ? 100.0 * s.injected_foreign / s.injected : 0.0, s.unanswerable_empty,
              s.unanswerable);
}

const char kHeader[] =
    "| ranking | queries | recall@5 | MRR@10 | nothing relevant injected (top 10) | nothing "
    "injected | precision of what is injected | injected from other repositories | nothing "
    "injected / queries with no relevant memory |\n|---|---|---|---|---|---|---|---|---|\n";

void Quality(const BankParts& parts, const std::string& dir, const std::vector<Run>& runs,
             const std::vector<Segment>& segments, bool grid) {
  const memory::BankOptions shipped;
  const std::vector<Variant> variants = Variants(shipped, grid);
  int tuning_runs = 0, held_runs = 0;
  for (const Run& r : runs) (TuningRun(r.id) ? tuning_runs : held_runs) += 1;
  auto results = RunFolds(parts, dir, runs, segments, variants);
  std::printf(
      "\n## Retrieval quality: leave-one-run-out; split by FNV-1a(run id) parity: %d tuning runs, "
      "%d held-out (flask's single run is never a query)\n",
      tuning_runs, held_runs);
  std::printf("shipped options: task_weight %.2f, injection_floor %.2f, other_project_floor %.2f\n",
              shipped.weights.task_weight, shipped.injection_floor, shipped.other_project_floor);
  for (Label label : kLabels) {
    for (bool tuning : {true, false}) {
      for (Condition cond : kConditions) {
        std::printf("\n### %s split; %s; relevant = same repository and a common touched %s\n\n",
                    tuning ? "tuning" : "HELD-OUT", ConditionName(cond),
                    label == Label::kFile ? "file" : "directory");
        std::printf("%s", kHeader);
        const auto& r = results[cond];
        PrintRow("Retrieve (shipped floors)", Evaluate(r, tuning, label, 0, shipped.injection_floor,
                                                       shipped.other_project_floor));
        PrintRow("same ranking, no floors", Evaluate(r, tuning, label, 0, 0, 0));
        PrintRow("random ranking (expectation)", Random(r, tuning, label), true);
      }
    }
  }
  if (!grid) return;
  // The tuning grid: tuning split only, all repositories visible, file label.
  std::printf("\n## Tuning grid (tuning split, all visible, file label)\n\n%s", kHeader);
  const auto& r = results[Condition::kAllVisible];
  for (size_t v = 1; v < variants.size(); ++v) {
    for (double floor : {0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2}) {
      for (double other : {0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 2.0}) {
        if (other != 0 && other < floor) continue;
        PrintRow(absl::StrCat(variants[v].name, ", floor ", floor, ", other ", other),
                 Evaluate(r, true, Label::kFile, v, floor, other));
      }
    }
  }
}

}  // namespace
}  // namespace contextd::bench

int main(int argc, char** argv) {
  using namespace contextd::bench;  // NOLINT(google-build-using-namespace): main only
  std::string set_path, dir;
  bool grid = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--grid") {
      grid = true;
    } else if (!a.empty() && a[0] != '-' && set_path.empty()) {
      set_path = a;
    } else {
      std::fprintf(stderr, "usage: retrieval_quality SET.json [--dir DIR] [--grid]\n");
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
  Quality(parts, dir, runs, segments, grid);
  std::filesystem::remove_all(dir);
  return 0;
}
