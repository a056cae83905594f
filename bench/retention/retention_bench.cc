// The retention sweep (decision 0031) on a store the size a team makes: fills a real SQLite file
// as `--agents` agents would over `--days` simulated days (a fake clock; payloads from recorded
// SWE-bench trajectories, /work/shared/workloads), through the server's own stores and group
// commit, then reports the file's size, moves the clock past the default windows and sweeps,
// reporting the sweep's cost (time per batch, rows/s, the longest it held the writer) and the
// size after incremental vacuum. Not part of ctest.
//
//   retention_bench --workload FILE [--agents 100] [--days 7] [--sessions 10] [--dir DIR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "model/conversation_store.h"
#include "nlohmann/json.hpp"
#include "store/retention.h"
#include "store/sqlite/database.h"
#include "store/sqlite/sqlite_conversation_store.h"
#include "store/sqlite/sqlite_retention_store.h"
#include "store/sqlite/sqlite_trail_store.h"

namespace {

using contextd::store::kDayMs;

struct Step {
  std::string command;  // the assistant's tool call
  std::string output;   // the tool result the agent saw
};

struct Args {
  std::string workload = "/work/shared/workloads/swebench-verified-gemini3-sample40.jsonl";
  std::string dir;
  int agents = 100;
  int days = 7;
  int sessions = 10;  // per agent and day
};

std::vector<std::vector<Step>> LoadTrajectories(const std::string& path) {
  std::vector<std::vector<Step>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("steps")) continue;
    std::vector<Step> steps;
    Step pending;
    for (const auto& s : j["steps"]) {
      const std::string role = s.value("role", "");
      if (role == "assistant") {
        pending.command = s.contains("args") && s["args"].is_object()
                              ? s["args"].value("command", std::string())
                              : std::string();
      } else if (role == "tool" && s.contains("content") && s["content"].is_string()) {
        pending.output = s["content"].get<std::string>();
        steps.push_back(pending);
        pending = Step{};
      }
    }
    if (!steps.empty()) out.push_back(std::move(steps));
  }
  return out;
}

int64_t Size(const std::string& path) {
  std::error_code ec;
  int64_t total = 0;
  for (const char* suffix : {"", "-wal", "-search", "-search-wal"}) {
    auto n = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += static_cast<int64_t>(n);
  }
  return total;
}

void Check(const absl::Status& st, const char* what) {
  if (!st.ok()) {
    std::cerr << what << ": " << st << "\n";
    std::exit(1);
  }
}

// One session of one agent: a root scope, a branch per 10 steps (folded with a summary), a
// tool_call and a tool_result event per step, a model request per step (usage row, the thread's
// frontier saved, a decision every 4th request). Payloads are the recorded ones, made distinct
// per session (real agents rarely see byte-identical outputs) except every 5th, which stays as
// recorded: shared blobs, as when agents read the same file.
void Session(contextd::store::SqliteTrailStore& trail,
             contextd::store::SqliteConversationStore& conv, contextd::store::Database& db,
             const std::vector<Step>& steps, const std::string& sid, int64_t start_ms,
             int64_t* events) {
  using namespace contextd;
  trail::Scope root;
  root.id = "ses_" + sid;
  root.session = trail::SessionRef{"team", "proj", sid};
  root.kind = trail::ScopeKind::kSession;
  root.description = "session " + sid;
  root.created_at_ms = start_ms;
  Check(trail.OpenScope(root), "open root");
  model::ConversationKey key{"team", sid, "th", "proj"};
  std::vector<std::string> frontier;
  std::string branch;
  int64_t t = start_ms;
  for (size_t i = 0; i < steps.size(); ++i) {
    t += 30'000;
    if (i % 10 == 0) {
      if (!branch.empty()) Check(trail.FoldScope(branch, "summary of " + branch, 20, t), "fold");
      branch = absl::StrCat("br_", sid, "_", i);
      trail::Scope b = root;
      b.id = branch;
      b.kind = trail::ScopeKind::kBranch;
      b.parent_id = root.id;
      b.description = steps[i].command.substr(0, 120);
      b.created_at_ms = t;
      Check(trail.OpenScope(b), "open branch");
    }
    const bool shared = i % 5 == 0;
    trail::NewEvent call{
        branch, trail::EventKind::kToolCall,
        "bash", shared ? steps[i].command : absl::StrCat(sid, "\n", steps[i].command),
        8,      false,
        t};
    trail::NewEvent result{branch,
                           trail::EventKind::kToolResult,
                           "bash",
                           shared ? steps[i].output : absl::StrCat(sid, "\n", steps[i].output),
                           static_cast<int64_t>(steps[i].output.size() / 4),
                           false,
                           t};
    auto appended = trail.AppendEvents({call, result});
    Check(appended.status(), "append");
    *events += 2;
    model::UsageRecord u;
    u.key = key;
    u.project = "proj";
    u.request_id = absl::StrCat("mreq_", sid, "_", i);
    u.at_ms = t;
    u.api = "anthropic";
    u.model = "claude-sonnet-4-5";
    u.status = 200;
    u.input_tokens = 2000 + static_cast<int64_t>(i) * 900;
    u.cache_read_input_tokens = u.input_tokens * 9 / 10;
    u.output_tokens = 300;
    Check(conv.RecordUsage(u), "usage");
    frontier.push_back(std::string(16, static_cast<char>('a' + i % 26)) + std::to_string(i));
    model::ConversationUpdate up;
    up.frontier = frontier;
    up.at_ms = t;
    if (i % 4 == 3) {
      up.new_rewrites.push_back(
          {model::RewriteKind::kAutoFold, absl::StrCat("k", i), std::string(220, 'h')});
    }
    Check(conv.Save(key, up), "save");
    if (i % 8 == 7) {  // an engine batch, then the WAL restart the server does after it
      Check(db.CommitGroup(), "commit");
      db.RestartWalIfDue();
    }
  }
  if (!branch.empty()) Check(trail.FoldScope(branch, "summary", 20, t), "fold");
  Check(db.CommitGroup(), "commit");
  db.RestartWalIfDue();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace contextd;
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--workload") args.workload = v;
    if (k == "--dir") args.dir = v;
    if (k == "--agents") args.agents = std::stoi(v);
    if (k == "--days") args.days = std::stoi(v);
    if (k == "--sessions") args.sessions = std::stoi(v);
  }
  const auto trajectories = LoadTrajectories(args.workload);
  if (trajectories.empty()) {
    std::cerr << "no trajectories in " << args.workload << "\n";
    return 1;
  }
  if (args.dir.empty()) {
    args.dir = (std::filesystem::temp_directory_path() / "contextd_retention_bench").string();
  }
  std::filesystem::remove_all(args.dir);
  std::filesystem::create_directories(args.dir);
  const std::string path = args.dir + "/contextd.db";
  base::FakeClock clock;
  const int64_t day0 = clock.WallMillis() / kDayMs * kDayMs;
  int64_t events = 0, sessions = 0;
  const auto fill_start = std::chrono::steady_clock::now();
  {
    auto opened = store::Database::Open(path);
    Check(opened.status(), "open");
    std::shared_ptr<store::Database> db(std::move(*opened));
    db->EnableGroupCommit([] {});
    auto trail = store::SqliteTrailStore::Create(db);
    Check(trail.status(), "trail");
    auto conv = store::SqliteConversationStore::Create(db);
    Check(conv.status(), "conversations");
    for (int d = 0; d < args.days; ++d) {
      for (int s = 0; s < args.sessions; ++s) {
        for (int a = 0; a < args.agents; ++a) {
          const auto& steps = trajectories[(d * 7919 + s * 104729 + a * 31) % trajectories.size()];
          const int64_t start = day0 + d * kDayMs + 9 * 3'600'000 + s * 45 * 60'000 + a * 1000;
          Session(**trail, **conv, *db, steps, absl::StrCat("a", a, "d", d, "s", s), start,
                  &events);
          ++sessions;
        }
      }
      std::fprintf(stderr, "day %d: %lld sessions, %lld events, %.1f MB with the WAL\n", d + 1,
                   static_cast<long long>(sessions), static_cast<long long>(events),
                   static_cast<double>(Size(path)) / 1e6);
    }
    Check((*trail)->search_index().CatchUp(), "search index");
  }
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();
  const int64_t week_bytes = Size(path);
  std::printf(
      "filled %d agents x %d days x %d sessions/day: %lld sessions, %lld events in %.0f s\n",
      args.agents, args.days, args.sessions, static_cast<long long>(sessions),
      static_cast<long long>(events), fill_s);
  std::printf(
      "store after %d days (nothing is old enough for the default windows yet): %.1f MB "
      "(database, WAL and search index)\n",
      args.days, static_cast<double>(week_bytes) / 1e6);

  // As in the server: the engine's Database (its background checkpointer) stays open.
  auto engine_db = store::Database::Open(path);
  Check(engine_db.status(), "engine database");
  auto retention = store::SqliteRetentionStore::Open(path);
  Check(retention.status(), "retention");
  auto kept = (*retention)->Kept();
  Check(kept.status(), "kept");
  std::printf(
      "kept: %lld scopes, %lld events, %lld blobs (%.1f MB), %lld usage rows, %lld "
      "threads, %lld rewrites\n",
      static_cast<long long>(kept->scopes), static_cast<long long>(kept->events),
      static_cast<long long>(kept->blobs), static_cast<double>(kept->blob_bytes) / 1e6,
      static_cast<long long>(kept->usage_rows), static_cast<long long>(kept->threads),
      static_cast<long long>(kept->rewrites));
  // 30 days after the middle of the week: the sessions of its first half are past the trail and
  // usage windows (the default policy, as the server runs it, pauses included).
  const int64_t now = day0 + (args.days / 2) * kDayMs + 30 * kDayMs;
  store::RetentionPolicy policy;
  // A writer beside the sweep, as the engine: an event appended every 5 ms to a live session
  // (its own connection, plain commits), each write's latency recorded.
  std::atomic<bool> sweeping{true};
  std::atomic<bool> baseline{true};  // the first 3 s: the writer alone, for comparison
  std::vector<double> write_ms, baseline_ms;
  std::thread writer([&] {
    auto live = store::SqliteTrailStore::Open(path);
    Check(live.status(), "writer");
    trail::Scope root;
    root.id = "ses_live";
    root.session = trail::SessionRef{"team", "proj", "live"};
    root.kind = trail::ScopeKind::kSession;
    root.created_at_ms = now;
    Check((*live)->OpenScope(root), "live root");
    for (int n = 0; sweeping.load(); ++n) {
      const auto t0 = std::chrono::steady_clock::now();
      trail::NewEvent e{"ses_live", trail::EventKind::kToolResult,
                        "bash",     absl::StrCat("live output ", n),
                        3,          false,
                        now};
      Check((*live)->AppendEvents({e}).status(), "live append");
      (baseline.load() ? baseline_ms : write_ms)
          .push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  baseline.store(false);
  auto report = (*retention)->Sweep(policy, now);
  sweeping.store(false);
  writer.join();
  Check(report.status(), "sweep");
  std::sort(write_ms.begin(), write_ms.end());
  std::sort(baseline_ms.begin(), baseline_ms.end());
  if (!baseline_ms.empty()) {
    std::printf(
        "the writer alone (3 s before the sweep): %zu appends, p50 %.2f ms, p99 %.2f ms, "
        "max %.2f ms\n",
        baseline_ms.size(), baseline_ms[baseline_ms.size() / 2],
        baseline_ms[baseline_ms.size() * 99 / 100], baseline_ms.back());
  }
  const auto& r = *report;
  const int64_t rows = r.scopes.rows + r.events.rows + r.blobs.rows + r.usage_rows.rows +
                       r.threads.rows + r.rewrites.rows;
  std::printf("sweep: %s\n", store::RetentionSummary(r).c_str());
  std::printf(
      "sweep cost: %lld rows in %lld ms = %.0f rows/s; %lld batches, %.2f ms per batch "
      "on average, longest %.2f ms holding the writer (pauses of %lld us between)\n",
      static_cast<long long>(rows), static_cast<long long>(r.elapsed_ms),
      r.elapsed_ms > 0 ? 1000.0 * static_cast<double>(rows) / r.elapsed_ms : 0.0,
      static_cast<long long>(r.batches),
      r.batches > 0 ? static_cast<double>(r.batch_us_total) / r.batches / 1000.0 : 0.0,
      static_cast<double>(r.batch_us_max) / 1000.0, static_cast<long long>(policy.pause_us));
  if (!write_ms.empty()) {
    std::printf("a writer beside the sweep: %zu appends, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
                write_ms.size(), write_ms[write_ms.size() / 2],
                write_ms[write_ms.size() * 99 / 100], write_ms.back());
  }
  retention->reset();
  engine_db->reset();
  std::printf("store after the sweep and incremental vacuum: %.1f MB (was %.1f MB)\n",
              static_cast<double>(Size(path)) / 1e6, static_cast<double>(week_bytes) / 1e6);
  return 0;
}
