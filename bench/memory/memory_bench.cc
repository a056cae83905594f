// memory_bench: the ReasoningBank's injection latency and footprint at scale (issue 18). Builds a
// bank of N memories (default 100,000) in a real SQLite file through SqliteMemoryStore and
// MemoryBank::Import, with texts sampled (seeded) from the recorded workloads' real text, spread
// over tenants, projects and scopes; then times MemoryBank::Retrieve (what branch_create runs)
// and Search for realistic branch tasks (wall and thread CPU time), and reports the file's size,
// the FTS5 share (dbstat) and the process RSS. A second pass on a sample of the queries splits
// the time: the store's FindMatches (term statistics and the match) vs the bank's scoring, with
// how many terms are kept and items matched. BM25 only (no embedder). With --backend postgres the
// SQLite bank is moved into a fresh database of a local PostgreSQL server (store/testing's
// PgTestServer) by the store's own export/import (one transaction), PgMemoryStore stems and counts
// it at open (timed), and the queries run there.
// Usage: memory_bench [--n N] [--queries Q] [--tenants T] [--projects P] [--seed S]
//                     [--warmup W] [--diagnose-every K] [--workloads DIR] [--dir DIR] [--keep]
//                     [--db FILE (reuse a bank built with the same --n/--tenants/--projects)]
//                     [--backend sqlite|postgres]
#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "bench/memory/bench_support.h"
#include "memory/memory_bank.h"
#include "memory/ranking.h"
#include "nlohmann/json.hpp"
#include "store/backend_options.h"
#include "store/postgres/pg_memory_store.h"
#include "store/sqlite/sqlite_memory_store.h"
#include "store/store_transfer.h"
#if CONTEXTD_BENCH_POSTGRES
#include "store/testing/pg_test_server.h"
#endif

namespace contextd::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;
using memory::MemoryItem;

struct Options {
  int64_t n = 100000;
  int queries = 2000;
  int warmup = 100;
  int diagnose_every = 10;
  int tenants = 4;
  int projects = 5;  // per tenant
  uint64_t seed = 1;
  std::string workloads = DefaultWorkloadsDir();
  std::string dir;
  std::string db;
  bool keep = false;
  bool postgres = false;
};

double MiB(int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

// CPU time of the calling thread: what a call costs without the waits of a shared machine.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

// Words of the recorded runs, in order: `prose` from the issues (inside <pr_description>) and the
// agent's messages, `output` from tool results; plus the repository paths and commands the agent
// used. Texts are windows of consecutive words at seeded random offsets, so their vocabulary and
// document frequencies follow the real text's.
class Corpus {
 public:
  bool Load(const std::vector<std::string>& files) {
    std::set<std::string> paths, commands;
    for (const std::string& file : files) {
      std::ifstream in(file);
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json run = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (run.is_discarded()) return false;
        std::string task = run.value("task", "");
        size_t a = task.find("<pr_description>"), b = task.find("</pr_description>");
        if (a != std::string::npos && b != std::string::npos && b > a) {
          task = task.substr(a + 16, b - a - 16);
        }
        Split(task, prose_);
        for (const auto& step : run.value("steps", nlohmann::json::array())) {
          if (!step.is_object() || !step.contains("content") || !step["content"].is_string()) {
            continue;
          }
          const std::string content = step["content"].get<std::string>();
          if (step.value("role", "") == "assistant") {
            Split(absl::StrReplaceAll(content, {{"THOUGHT:", " "}}), prose_);
            if (step.contains("args") && step["args"].is_object() &&
                step["args"].contains("command") && step["args"]["command"].is_string()) {
              std::string cmd = step["args"]["command"].get<std::string>();
              if (cmd.size() <= 80 && cmd.find('\n') == std::string::npos) commands.insert(cmd);
              std::vector<std::string> words;
              Split(cmd, words);
              for (const std::string& w : words) {
                if (w.find('/') != std::string::npos && w.rfind('.') != std::string::npos &&
                    w.rfind('.') > w.rfind('/') && w[0] != '-') {
                  paths.insert(w);
                }
              }
            }
          } else {
            Split(absl::StrReplaceAll(content, {{"<returncode>", " "},
                                                {"</returncode>", " "},
                                                {"<output>", " "},
                                                {"</output>", " "},
                                                {"<output_head>", " "},
                                                {"</output_head>", " "},
                                                {"<output_tail>", " "},
                                                {"</output_tail>", " "}}),
                  output_);
          }
        }
      }
    }
    paths_.assign(paths.begin(), paths.end());
    commands_.assign(commands.begin(), commands.end());
    return prose_.size() > 1000 && output_.size() > 1000 && !paths_.empty() && !commands_.empty();
  }

  std::string Prose(std::mt19937_64& rng, int lo, int hi) const {
    return Window(prose_, rng, lo, hi);
  }
  std::string Output(std::mt19937_64& rng, int lo, int hi) const {
    return Window(output_, rng, lo, hi);
  }
  const std::string& Path(std::mt19937_64& rng) const { return Pick(paths_, rng); }
  const std::string& Command(std::mt19937_64& rng) const { return Pick(commands_, rng); }
  size_t words() const { return prose_.size() + output_.size(); }

 private:
  static void Split(std::string_view text, std::vector<std::string>& out) {
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
      size_t j = i;
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])) == 0) ++j;
      // Very long runs (base64, minified lines) are not words anyone writes in a task.
      if (j > i && j - i <= 60) out.emplace_back(text.substr(i, j - i));
      i = j;
    }
  }
  static std::string Window(const std::vector<std::string>& words, std::mt19937_64& rng, int lo,
                            int hi) {
    const size_t n = std::uniform_int_distribution<int>(lo, hi)(rng);
    const size_t start = std::uniform_int_distribution<size_t>(0, words.size() - n - 1)(rng);
    std::string out;
    for (size_t i = start; i < start + n; ++i)
      absl::StrAppend(&out, i > start ? " " : "", words[i]);
    return out;
  }
  static const std::string& Pick(const std::vector<std::string>& v, std::mt19937_64& rng) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  }

  std::vector<std::string> prose_, output_, paths_, commands_;
};

std::string Tenant(int t) { return absl::StrCat("tenant", t); }
std::string Project(int p) { return absl::StrCat("project", p); }

// One memory shaped like the structural distiller's (title = the task, "Found: ... Way there:
// looked at ..., ran `...`"), with a source task of 6-14 words and a prompt of 30-300 words.
MemoryItem MakeItem(const Corpus& c, const Options& o, int64_t i, std::mt19937_64& rng) {
  auto cut = [](const std::string& s, size_t max) { return std::string(memory::Utf8Head(s, max)); };
  std::uniform_real_distribution<double> u(0, 1);
  MemoryItem m;
  char id[40];
  std::snprintf(id, sizeof(id), "mem_%016llx", static_cast<unsigned long long>(i) + 1);
  m.id = id;
  m.tenant = Tenant(std::uniform_int_distribution<int>(0, o.tenants - 1)(rng));
  m.project = Project(std::uniform_int_distribution<int>(0, o.projects - 1)(rng));
  const double s = u(rng);
  m.scope = s < 0.80   ? memory::Scope::kProject
            : s < 0.95 ? memory::Scope::kTeam
                       : memory::Scope::kOrg;
  const std::string task = c.Prose(rng, 6, 14);
  const bool success = u(rng) < 0.75;
  m.outcome = success ? memory::Outcome::kSuccess : memory::Outcome::kFailure;
  m.title = cut(success ? task : absl::StrCat("Pitfall: ", task), 120);
  m.description = cut(absl::StrCat(success ? "How a task like \"" : "An error met on the way to \"",
                                   task, success ? "\" was done." : "\"."),
                      memory::kMaxDescriptionChars);
  std::string way =
      absl::StrCat("looked at ", c.Path(rng), ", ", c.Path(rng), "; ran `", c.Command(rng), "`");
  m.content = success ? absl::StrCat("Found: ", c.Prose(rng, 15, 50), " Way there: ", way, ".")
                      : absl::StrCat("Met: ", c.Output(rng, 8, 25), ". It did not stop the task; ",
                                     "see how it ended: ", c.Prose(rng, 10, 30));
  m.content = cut(m.content, memory::kMaxContentChars);
  m.tags = {"bash"};
  m.source.branch_id = absl::StrCat("br_", i);
  m.source.description = task;
  m.source.prompt = c.Prose(rng, 30, 300);
  m.status = memory::Status::kActive;
  m.origin = "extracted";
  return m;
}

struct QueryCase {
  memory::Caller caller;
  std::string text;  // description + "\n" + prompt
};

// A branch task: a description of about 10 words and a prompt of 30-300 words.
QueryCase MakeQuery(const Corpus& c, const Options& o, int i, std::mt19937_64& rng) {
  QueryCase q;
  q.caller.tenant = Tenant(std::uniform_int_distribution<int>(0, o.tenants - 1)(rng));
  q.caller.project = Project(std::uniform_int_distribution<int>(0, o.projects - 1)(rng));
  q.caller.actor = absl::StrCat("br_q", i);
  q.text = absl::StrCat(c.Prose(rng, 8, 12), "\n", c.Prose(rng, 30, 300));
  return q;
}

// Page bytes per table or index, from dbstat; empty if dbstat is not compiled in.
std::vector<std::pair<std::string, int64_t>> DbstatBytes(const std::string& path) {
  std::vector<std::pair<std::string, int64_t>> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC",
                           -1, &st, nullptr) == SQLITE_OK) {
      while (sqlite3_step(st) == SQLITE_ROW) {
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                         sqlite3_column_int64(st, 1));
      }
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

void PrintQuantiles(const char* what, const Quantiles& q) {
  std::printf("| %-44s | %7zu | %8.3f | %8.3f | %8.3f | %8.3f | %8.3f |\n", what, q.n, q.p50, q.p95,
              q.p99, q.max, q.mean);
}

#if CONTEXTD_BENCH_POSTGRES
// Moves the SQLite bank at `path` into a fresh database of a local PostgreSQL server (started
// here, kept in `server`) with the store's own export and import (ImportTables: one transaction),
// then opens a PgMemoryStore over it, which stems and counts the items (timed apart).
absl::StatusOr<std::unique_ptr<memory::MemoryStore>> MoveToPostgres(
    const std::string& path, const std::string& dir,
    std::unique_ptr<store::testing::PgTestServer>& server, double& move_ms, double& open_ms,
    int64_t& count) {
  ASSIGN_OR_RETURN(server, store::testing::PgTestServer::Start());
  ASSIGN_OR_RETURN(std::string dbname, server->CreateDatabase());
  const auto t0 = SteadyClock::now();
  store::BackendOptions from;
  from.sqlite_path = path;
  std::filesystem::create_directories(dir);
  const std::string dump = dir + "/export.jsonl";
  {
    std::ofstream out(dump, std::ios::binary);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", dump));
    RETURN_IF_ERROR(store::ExportTables(from, out).status());
  }
  store::BackendOptions to;
  to.kind = store::BackendKind::kPostgres;
  to.postgres_conninfo = server->Conninfo(dbname);
  {
    std::ifstream in(dump, std::ios::binary);
    RETURN_IF_ERROR(store::ImportTables(to, in).status());
  }
  std::filesystem::remove(dump);
  move_ms = MsSince(t0);
  const auto t1 = SteadyClock::now();
  store::PgOptions pg;
  pg.conninfo = server->Conninfo(dbname);
  ASSIGN_OR_RETURN(std::unique_ptr<store::PgMemoryStore> opened, store::PgMemoryStore::Open(pg));
  open_ms = MsSince(t1);
  ASSIGN_OR_RETURN(count, opened->Count());
  return std::unique_ptr<memory::MemoryStore>(std::move(opened));
}
#endif

int Run(const Options& o) {
  base::InitLogging(base::LogLevel::kWarn);
  const std::vector<std::string> files = WorkloadFiles(o.workloads);
  if (files.empty()) {
    std::printf("memory_bench: skipped: no *.jsonl in %s\n", o.workloads.c_str());
    return 0;
  }
  Corpus corpus;
  if (!corpus.Load(files)) {
    std::fprintf(stderr, "memory_bench: %s: unreadable or too little text\n", o.workloads.c_str());
    return 1;
  }
  BankParts parts;
  parts.For(nullptr).count_tokens("warm the tokenizer up");  // loads the vocabulary now
  const int64_t rss_start = ProcStatusKb("VmRSS");
  std::mt19937_64 rng(o.seed);

  std::string dir = o.dir;
  if (dir.empty())
    dir = (std::filesystem::temp_directory_path() / "contextd-memory-bench").string();
  const std::string path = o.db.empty() ? dir + "/memory.db" : o.db;
  double load_ms = 0, last_tenth_ms = 0;
  if (o.db.empty()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto store = store::SqliteMemoryStore::Open(path);
    if (!store.ok()) {
      std::fprintf(stderr, "memory_bench: %s\n", store.status().ToString().c_str());
      return 1;
    }
    memory::MemoryBank bank(parts.For(store->get()), memory::BankOptions{});
    const auto t0 = SteadyClock::now();
    auto tenth = t0;
    for (int64_t i = 0; i < o.n; ++i) {
      if (i == o.n - o.n / 10) tenth = SteadyClock::now();
      absl::Status st = bank.Import(MakeItem(corpus, o, i, rng), "bench");
      if (!st.ok()) {
        std::fprintf(stderr, "memory_bench: import %lld: %s\n", static_cast<long long>(i),
                     st.ToString().c_str());
        return 1;
      }
      if ((i + 1) % 10000 == 0) {
        std::fprintf(stderr, "  loaded %lld in %.1f s\n", static_cast<long long>(i) + 1,
                     MsSince(t0) / 1000);
      }
    }
    load_ms = MsSince(t0);
    last_tenth_ms = MsSince(tenth);
  }
  const int64_t rss_loaded = ProcStatusKb("VmRSS");

  // Footprint, with the WAL copied back and truncated.
  {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
      sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    }
    sqlite3_close(db);
  }
  const int64_t file_bytes = FileBytes(path), wal_bytes = FileBytes(path + "-wal");
  const auto pages = DbstatBytes(path);

  // A fresh connection, as a server after a restart: what the process holds for the index.
  const int64_t rss_before_open = ProcStatusKb("VmRSS");
  const int64_t anon_before_open = ProcStatusKb("RssAnon");
  std::unique_ptr<memory::MemoryStore> store;
  int64_t count = -1;
  double pg_move_ms = 0, pg_open_ms = 0;
#if CONTEXTD_BENCH_POSTGRES
  std::unique_ptr<store::testing::PgTestServer> pg_server;
  if (o.postgres) {
    auto moved = MoveToPostgres(path, dir, pg_server, pg_move_ms, pg_open_ms, count);
    if (!moved.ok()) {
      std::fprintf(stderr, "memory_bench: postgres: %s\n", moved.status().ToString().c_str());
      return 1;
    }
    store = *std::move(moved);
  }
#else
  if (o.postgres) {
    std::fprintf(stderr, "memory_bench: built without the PostgreSQL test server (tests off)\n");
    return 1;
  }
#endif
  if (!o.postgres) {
    auto opened = store::SqliteMemoryStore::Open(path);
    if (!opened.ok()) {
      std::fprintf(stderr, "memory_bench: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    auto n = (*opened)->Count();
    count = n.ok() ? *n : -1;
    store = *std::move(opened);
  }
  memory::MemoryBank bank(parts.For(store.get()), memory::BankOptions{});

  // Queries have their own generator: the same whether the bank was built now or reused.
  std::mt19937_64 query_rng(o.seed + 0x9e3779b97f4a7c15ULL);
  std::vector<QueryCase> queries;
  for (int i = 0; i < o.warmup + o.queries; ++i) {
    queries.push_back(MakeQuery(corpus, o, i, query_rng));
  }
  std::vector<double> retrieve_ms, search_ms, retrieve_cpu_ms, search_cpu_ms, query_words, returned;
  std::vector<double> terms_ms, find_ms, score_ms, known, kept, matched;
  size_t empty = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const QueryCase& q = queries[i];
    auto t0 = SteadyClock::now();
    double cpu0 = ThreadCpuMs();
    auto got = bank.Retrieve(q.caller, q.text);
    const double r_ms = MsSince(t0), r_cpu = ThreadCpuMs() - cpu0;
    t0 = SteadyClock::now();
    cpu0 = ThreadCpuMs();
    auto hits = bank.Search(q.caller, q.text, 10, std::nullopt);
    const double s_ms = MsSince(t0), s_cpu = ThreadCpuMs() - cpu0;
    if (!got.ok() || !hits.ok()) {
      std::fprintf(stderr, "memory_bench: query %zu: %s %s\n", i, got.status().ToString().c_str(),
                   hits.status().ToString().c_str());
      return 1;
    }
    if (static_cast<int>(i) < o.warmup) continue;
    retrieve_ms.push_back(r_ms);
    search_ms.push_back(s_ms);
    retrieve_cpu_ms.push_back(r_cpu);
    search_cpu_ms.push_back(s_cpu);
    returned.push_back(static_cast<double>(got->size()));
    empty += got->empty();
    query_words.push_back(static_cast<double>(
        std::count_if(q.text.begin(), q.text.end(), [](char c) { return c == ' ' || c == '\n'; }) +
        1));
  }
  const int64_t rss_after_queries = ProcStatusKb("VmRSS");
  const int64_t anon_after_queries = ProcStatusKb("RssAnon");

  // Second pass, on every diagnose_every-th timed query: Retrieve's time split between the
  // store's FindMatches and the bank's scoring of what it found.
  const memory::BankOptions defaults;
  for (size_t i = o.warmup; i < queries.size(); i += o.diagnose_every) {
    const QueryCase& q = queries[i];
    const memory::Visibility v{q.caller.tenant, q.caller.project, std::nullopt, false};
    auto t0 = SteadyClock::now();
    const std::vector<std::string> terms = memory::QueryTerms(q.text);
    terms_ms.push_back(MsSince(t0));
    t0 = SteadyClock::now();
    auto found = store->FindMatches(v, terms, defaults.max_matches);
    find_ms.push_back(MsSince(t0));
    if (!found.ok()) {
      std::fprintf(stderr, "memory_bench: query %zu: %s\n", i, found.status().ToString().c_str());
      return 1;
    }
    t0 = SteadyClock::now();
    double sum = 0;
    for (double score : memory::ScoreMatches(terms, *found, defaults.weights)) sum += score;
    score_ms.push_back(MsSince(t0));
    known.push_back(static_cast<double>(found->global.terms.size()));
    kept.push_back(static_cast<double>(found->kept.size()));
    matched.push_back(static_cast<double>(found->items.size()));
    if (sum < 0) return 1;  // keeps the scoring from being optimised away
  }

  std::printf("\n## memory_bench: %lld memories (%s), %d timed queries after %d warm-up\n\n",
              static_cast<long long>(count), o.postgres ? "PostgreSQL" : path.c_str(), o.queries,
              o.warmup);
  std::printf("corpus: %zu words of %zu workload file(s); %d tenants x %d projects; seed %llu%s\n",
              corpus.words(), files.size(), o.tenants, o.projects,
              static_cast<unsigned long long>(o.seed), o.db.empty() ? "" : " (reused bank)");
  {
    std::ifstream in("/proc/loadavg");
    std::string one, five;
    in >> one >> five;
    std::printf(
        "machine: %u hardware threads, load average %s (1 min) %s (5 min) after the "
        "queries\n",
        std::thread::hardware_concurrency(), one.c_str(), five.c_str());
  }
  if (o.db.empty()) {
    std::printf(
        "load: %.1f s for %lld Import calls (one commit each): %.0f items/s overall, "
        "%.0f items/s over the last tenth\n",
        load_ms / 1000, static_cast<long long>(o.n), static_cast<double>(o.n) / (load_ms / 1000),
        static_cast<double>(o.n / 10) / (last_tenth_ms / 1000));
  }
  std::printf(
      "\n| latency (ms)                                 |       n |      p50 |      p95 |"
      "      p99 |      max |     mean |\n|---|---|---|---|---|---|---|\n");
  PrintQuantiles("Retrieve (branch_create injection)", Summarize(retrieve_ms));
  PrintQuantiles("Retrieve, thread CPU time", Summarize(retrieve_cpu_ms));
  PrintQuantiles("Search (limit 10)", Summarize(search_ms));
  PrintQuantiles("Search (limit 10), thread CPU time", Summarize(search_cpu_ms));
  PrintQuantiles("split: QueryTerms (stemming)", Summarize(terms_ms));
  PrintQuantiles("split: store FindMatches", Summarize(find_ms));
  PrintQuantiles("split: bank scoring of the matches", Summarize(score_ms));
  std::printf(
      "\n| per query                                    |       n |      p50 |      p95 |"
      "      p99 |      max |     mean |\n|---|---|---|---|---|---|---|\n");
  PrintQuantiles("query words (description + prompt)", Summarize(query_words));
  PrintQuantiles("candidates returned by Retrieve", Summarize(returned));
  PrintQuantiles("query terms known to the store", Summarize(known));
  PrintQuantiles("terms kept by the budget", Summarize(kept));
  PrintQuantiles("items matched (read and scored)", Summarize(matched));
  std::printf("queries with no candidate: %zu\n", empty);

  int64_t fts = 0, total = 0;
  for (const auto& [name, bytes] : pages) {
    total += bytes;
    if (name.rfind("memory", 0) == 0 && name.find("fts") != std::string::npos) fts += bytes;
  }
  std::printf(
      "\nfootprint%s: database file %.1f MiB (WAL %.1f MiB after a truncating checkpoint), "
      "%.0f bytes per memory\n",
      o.postgres ? " (the SQLite bank moved to PostgreSQL)" : "", MiB(file_bytes), MiB(wal_bytes),
      static_cast<double>(file_bytes) / static_cast<double>(count > 0 ? count : 1));
  if (pages.empty()) {
    std::printf("dbstat not compiled in: no per-table split\n");
  } else {
    std::printf("FTS5 index (memory_stem_fts*): %.1f MiB = %.0f%% of pages\n", MiB(fts),
                100.0 * static_cast<double>(fts) / static_cast<double>(total));
    for (const auto& [name, bytes] : pages) {
      if (bytes * 100 >= total) std::printf("  %-32s %8.1f MiB\n", name.c_str(), MiB(bytes));
    }
  }
  char after_load[64] = "";
  if (o.db.empty()) {
    std::snprintf(after_load, sizeof(after_load), "%+.1f MiB after the load; ",
                  MiB((rss_loaded - rss_start) * 1024));
  }
  std::printf(
      "RSS (VmRSS): %.1f MiB at start (corpus, scrubber, tokenizer loaded); %s%+.1f MiB from "
      "opening the bank fresh to after its %zu queries, %+.1f MiB of it anonymous (RssAnon; the "
      "rest is database pages mapped by mmap_size, shared with the kernel's page cache) (VmHWM "
      "%.1f MiB)\n",
      MiB(rss_start * 1024), after_load, MiB((rss_after_queries - rss_before_open) * 1024),
      queries.size(), MiB((anon_after_queries - anon_before_open) * 1024),
      MiB(ProcStatusKb("VmHWM") * 1024));
  if (o.postgres) {
    std::printf(
        "postgres: export/import of the SQLite bank %.1f s; PgMemoryStore open (stems and "
        "counts rebuilt in one transaction) %.1f s\n",
        pg_move_ms / 1000, pg_open_ms / 1000);
  }
  store.reset();
#if CONTEXTD_BENCH_POSTGRES
  pg_server.reset();
#endif
  if (!o.keep && o.db.empty()) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace contextd::bench

int main(int argc, char** argv) {
  contextd::bench::Options o;
  auto to_int = [](const std::string& v) { return std::atoi(v.c_str()); };
  const std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--n", [&](const std::string& v) { o.n = std::atoll(v.c_str()); }},
      {"--queries", [&](const std::string& v) { o.queries = to_int(v); }},
      {"--warmup", [&](const std::string& v) { o.warmup = to_int(v); }},
      {"--diagnose-every", [&](const std::string& v) { o.diagnose_every = to_int(v); }},
      {"--tenants", [&](const std::string& v) { o.tenants = to_int(v); }},
      {"--projects", [&](const std::string& v) { o.projects = to_int(v); }},
      {"--seed", [&](const std::string& v) { o.seed = std::strtoull(v.c_str(), nullptr, 10); }},
      {"--workloads", [&](const std::string& v) { o.workloads = v; }},
      {"--dir", [&](const std::string& v) { o.dir = v; }},
      {"--db", [&](const std::string& v) { o.db = v; }},
      {"--backend", [&](const std::string& v) { o.postgres = v == "postgres"; }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto flag = flags.find(a);
    if (a == "--keep") {
      o.keep = true;
    } else if (flag != flags.end() && i + 1 < argc) {
      flag->second(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: memory_bench [--n N] [--queries Q] [--warmup W] [--diagnose-every K] "
                   "[--tenants T] [--projects P] [--seed S] [--workloads DIR] [--dir DIR] [--keep] "
                   "[--db FILE] [--backend sqlite|postgres]\n");
      return 2;
    }
  }
  if (o.n < 1 || o.queries < 1 || o.tenants < 1 || o.projects < 1 || o.diagnose_every < 1 ||
      o.warmup < 0) {
    std::fprintf(stderr,
                 "memory_bench: --n, --queries, --tenants, --projects and --diagnose-every must be "
                 ">= 1, --warmup >= 0\n");
    return 2;
  }
  return contextd::bench::Run(o);
}
