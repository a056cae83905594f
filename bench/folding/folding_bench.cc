// Engine-level benchmarks: BranchManager over SqliteBranchStore on a real file (WAL,
// synchronous=NORMAL: every create and return is committed before the call returns).
//   BM_CreateReturnPair: one branch_create + branch_return pair per iteration, 16 sessions
//     round-robin; reports pairs/s and p50/p99 per pair.
//   BM_CreateWithActive/N: Create latency (manual time, the return is not timed) with N other
//     branches active across N/10 sessions; reports RSS of the process after populating.
// The token counter and scrubber are the cheap test doubles: this measures the engine and the
// store, not BPE or secret rules.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/testing/fakes.h"
#include "store/sqlite/sqlite_branch_store.h"

namespace contextd {
namespace {

using folding::BranchManager;
using folding::CreateRequest;
using folding::ReturnRequest;
using folding::SessionKey;

// Heap bytes in use (glibc), in MB: unlike RSS it shrinks when memory is freed, so deltas
// between benchmark runs in one process are meaningful.
double HeapMb() { return static_cast<double>(mallinfo2().uordblks) / (1024.0 * 1024.0); }

double RssMb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

std::string TempDb() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "contextd_bench_XXXXXX").string();
  char* dir = mkdtemp(tmpl.data());
  return std::string(dir) + "/contextd.db";
}

struct Engine {
  explicit Engine(int per_instance, bool full_sync = false) : exec(clock) {
    path = TempDb();
    store::DatabaseOptions opts;
    opts.synchronous_full = full_sync;
    if (getenv("BENCH_CKPT_MS")) opts.background_checkpoint_ms = atoi(getenv("BENCH_CKPT_MS"));
    store = std::move(*store::SqliteBranchStore::Open(path, opts));
    folding::FoldingConfig config;
    config.branch_creation_rate_limit = "1000000/second";
    config.max_concurrent_branches_per_instance = per_instance;
    mgr = std::make_unique<BranchManager>(config, exec, *store, counter, scrubber, nullptr);
  }
  ~Engine() {
    mgr.reset();
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ec);
  }
  template <typename F>
  void Run(F f) {
    exec.Post(std::move(f));
    exec.RunUntilIdle();
  }

  std::string path;
  base::FakeClock clock;
  base::ManualExecutor exec;
  folding::testing::WordTokenCounter counter;
  folding::testing::FakeScrubber scrubber;
  std::unique_ptr<store::SqliteBranchStore> store;
  std::unique_ptr<BranchManager> mgr;
};

CreateRequest Req() {
  CreateRequest r;
  r.description = "find where the config is parsed";
  r.prompt = "Search the repository for the YAML config loader and report the file and function.";
  r.budget = 4096;
  r.parent_branch_id = "";
  return r;
}

void SetPercentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["max_us"] = us.back();
}

void BM_CreateReturnPair(benchmark::State& state) {
  Engine e(1000, state.range(0) != 0);
  std::vector<SessionKey> sessions;
  for (int i = 0; i < 16; ++i) {
    sessions.push_back({"local", "default", absl::StrCat("s", i)});
  }
  std::vector<double> us;
  us.reserve(200000);
  ReturnRequest ret;
  ret.message = "The loader is config/load.cc:LoadConfig; it uses yaml-cpp and validates keys.";
  size_t i = 0;
  bool failed = false;
  for (auto _ : state) {
    const SessionKey& s = sessions[i++ % sessions.size()];
    auto t0 = std::chrono::steady_clock::now();
    e.Run([&] {
      auto c = e.mgr->Create(s, Req());
      if (!c.ok()) failed = true;
      ReturnRequest r = ret;
      r.branch_id = c.ok() ? c->branch_id : "";
      if (!e.mgr->Return(s, r).ok()) failed = true;
    });
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  if (failed) state.SkipWithError("create or return failed");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));  // pairs
  SetPercentiles(state, us);
}
BENCHMARK(BM_CreateReturnPair)
    ->Arg(0)
    ->ArgName("sync_full")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CreateReturnPair)
    ->Arg(1)
    ->ArgName("sync_full")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CreateWithActive(benchmark::State& state) {
  const int active = static_cast<int>(state.range(0));
  double heap_before = HeapMb();
  Engine e(active + 100);
  bool failed = false;
  for (int i = 0; i < active; ++i) {
    SessionKey s{"local", "default", absl::StrCat("bg", i / 10)};
    e.Run([&] {
      CreateRequest r = Req();
      if (!e.mgr->Create(s, r).ok()) failed = true;
    });
  }
  double heap_populate = HeapMb() - heap_before;
  SessionKey probe{"local", "default", "probe"};
  std::vector<double> us;
  for (auto _ : state) {
    std::string id;
    auto t0 = std::chrono::steady_clock::now();
    e.Run([&] {
      auto c = e.mgr->Create(probe, Req());
      if (c.ok()) {
        id = c->branch_id;
      } else {
        failed = true;
      }
    });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(secs);
    us.push_back(secs * 1e6);
    e.Run([&] {
      ReturnRequest r;
      r.branch_id = id;
      r.message = "done";
      if (!e.mgr->Return(probe, r).ok()) failed = true;
    });
  }
  if (failed) state.SkipWithError("create or return failed");
  state.counters["active"] = e.mgr->active_branches();
  state.counters["rss_mb"] = RssMb();
  state.counters["heap_populate_mb"] = heap_populate;
  SetPercentiles(state, us);
}
BENCHMARK(BM_CreateWithActive)->Arg(0)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace contextd

BENCHMARK_MAIN();
