// gateway_bench: contextd's own overhead per proxied tools/call. It runs N echo calls through a
// real McpServer session -> Gateway (real rule scrubber, o200k_base counter, BranchManager over a
// real SQLite file) -> the tiny C++ upstream (gateway_test_upstream) and back, and the same
// tools/call sent straight to another instance of that upstream over a raw stdio channel. The
// difference of the percentiles is contextd's overhead (the upstream's own time cancels out).
// Usage: gateway_bench [calls=3000] [payload_bytes=400]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "base/executor.h"
#include "base/logging.h"
#include "folding/branch_manager.h"
#include "folding/engine_branch_ledger.h"
#include "gateway/gateway.h"
#include "protocol/mcp_server.h"
#include "scrub/rule_scrubber.h"
#include "store/sqlite/sqlite_branch_store.h"
#include "tokens/bpe_tokenizer.h"
#include "transport/upstream_stdio_client.h"

namespace contextd {
namespace {

using protocol::Json;
using Clock = std::chrono::steady_clock;

// Waits for one message at a time.
class OneShotSink final : public protocol::MessageSink {
 public:
  void Send(Json message, const Json&) override {
    if (!message.contains("id") || message.contains("method")) return;  // notifications
    std::lock_guard<std::mutex> lock(mu_);
    last_ = message;
    ready_ = true;
    cv_.notify_all();
  }
  Json Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_; });
    ready_ = false;
    return last_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Json last_;
  bool ready_ = false;
};

void Receive(protocol::Session& session, const Json& message) {
  session.Receive(std::get<protocol::Message>(protocol::ParseMessage(message)));
}

struct Percentiles {
  double p50, p90, p99;
};

Percentiles Summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<size_t>(q * (us.size() - 1))]; };
  return {at(0.5), at(0.9), at(0.99)};
}

int Run(int calls, int payload) {
  base::InitLogging(base::LogLevel::kWarn);
  std::string text;
  while (static_cast<int>(text.size()) < payload) text += "the quick brown fox reads config.yaml ";
  text.resize(static_cast<size_t>(payload));

  // Direct: the raw stdio round trip to the upstream.
  std::mutex mu;
  std::condition_variable cv;
  bool got = false;
  auto channel =
      transport::UpstreamStdioChannel::Start({GATEWAY_TEST_UPSTREAM, {}, {}, "", 1 << 20, "direct"},
                                             {[&](std::string) {
                                                std::lock_guard<std::mutex> lock(mu);
                                                got = true;
                                                cv.notify_all();
                                              },
                                              nullptr});
  if (!channel.ok()) {
    std::fprintf(stderr, "%s\n", std::string(channel.status().message()).c_str());
    return 1;
  }
  auto direct_call = [&](int id) {
    Json req = {{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params", {{"name", "echo"}, {"arguments", {{"text", text}}}}}};
    std::unique_lock<std::mutex> lock(mu);
    got = false;
    lock.unlock();
    (void)(*channel)->Send(req.dump());
    lock.lock();
    cv.wait(lock, [&] { return got; });
  };

  // Through contextd.
  std::string dir =
      std::filesystem::temp_directory_path() / ("gateway_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto store = store::SqliteBranchStore::Open(dir + "/contextd.db");
  auto scrubber = scrub::BuildScrubber(scrub::ScrubConfig{});
  auto counter = tokens::GetEncoding("o200k_base");
  if (!store.ok() || !scrubber.ok() || !counter.ok()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  base::ThreadExecutor executor;
  auto server =
      std::make_shared<protocol::McpServer>(executor, protocol::ServerInfo{"bench", "1", ""});
  folding::FoldingConfig folding_config;
  folding_config.max_budget = 1'000'000'000;
  folding_config.default_budget = 1'000'000'000;
  std::unique_ptr<folding::BranchManager> manager;
  executor.RunSync([&] {
    manager = std::make_unique<folding::BranchManager>(folding_config, executor, **store, **counter,
                                                       **scrubber, nullptr);
    (void)manager->Recover();
  });
  // What the server charges through (server/server.cc): the ledger over the manager.
  folding::EngineBranchLedger ledger(executor, *manager, **store, nullptr, **counter);
  auto key_for = [](const protocol::SessionInfo& info) {
    return folding::SessionKey{info.tenant, "default", info.session_id};
  };
  gateway::UpstreamConfig config;
  config.name = "b";
  config.stdio = gateway::StdioUpstream{GATEWAY_TEST_UPSTREAM, {}, {}, ""};
  auto gw = gateway::Gateway::Create(
      gateway::GatewayDeps{
          server.get(), &ledger, *counter, scrubber->get(), key_for, nullptr, nullptr, {}},
      {config});
  if (!gw.ok()) return 1;
  executor.RunSync([&] { (*gw)->Start(); });
  for (int i = 0; i < 500; ++i) {
    bool settled = false;
    executor.RunSync([&] { settled = (*gw)->upstream("b")->ready(); });
    if (settled) break;
    usleep(10000);
  }
  auto sink = std::make_shared<OneShotSink>();
  protocol::SessionInfo info{"bench", "local", "stdio"};
  auto session = server->CreateSession(info, sink);
  Receive(*session, {{"jsonrpc", "2.0"},
                     {"id", 1},
                     {"method", "initialize"},
                     {"params",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", Json::object()},
                       {"clientInfo", {{"name", "b"}, {"version", "1"}}}}}});
  sink->Wait();
  Receive(*session, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  int next_id = 2;
  auto proxied_call = [&] {
    Receive(*session, {{"jsonrpc", "2.0"},
                       {"id", next_id++},
                       {"method", "tools/call"},
                       {"params", {{"name", "b__echo"}, {"arguments", {{"text", text}}}}}});
    Json r = sink->Wait();
    if (!r.contains("result") || r["result"].value("isError", false)) {
      std::fprintf(stderr, "call failed: %s\n", r.dump().c_str());
      std::exit(1);
    }
  };
  // Direct and proxied calls alternate so that both see the same machine load; the overhead is
  // the distribution of the paired differences.
  auto measure = [&](const char* what) {
    std::vector<double> direct, proxied, diff;
    for (int i = 0; i < 200; ++i) {
      direct_call(i + 1);
      proxied_call();
    }
    for (int i = 0; i < calls; ++i) {
      auto t0 = Clock::now();
      direct_call(i + 1);
      auto t1 = Clock::now();
      proxied_call();
      auto t2 = Clock::now();
      double d = std::chrono::duration<double, std::micro>(t1 - t0).count();
      double p = std::chrono::duration<double, std::micro>(t2 - t1).count();
      direct.push_back(d);
      proxied.push_back(p);
      diff.push_back(p - d);
    }
    Percentiles dp = Summarize(direct), pp = Summarize(proxied), od = Summarize(diff);
    std::printf(
        "%-26s direct p50 %6.1f us | proxied p50 %6.1f p90 %6.1f us | overhead p50 %6.1f "
        "p90 %6.1f p99 %7.1f us\n",
        what, dp.p50, pp.p50, pp.p90, od.p50, od.p90, od.p99);
  };
  std::printf("%d calls, %d-byte echo payload\n", calls, payload);
  measure("session root (no branch)");
  executor.RunSync([&] {
    folding::CreateRequest request;
    request.description = "bench";
    request.prompt = "bench";
    request.budget = 900'000'000;
    auto created = manager->Create(key_for(info), request);
    if (!created.ok())
      std::fprintf(stderr, "branch: %s\n", std::string(created.status().message()).c_str());
  });
  measure("inside a branch (SQLite)");

  session->Close("done");
  executor.RunSync([&] {
    (*gw)->Stop();
    gw->reset();
    manager.reset();
  });
  executor.Stop();
  (*channel)->Close();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace contextd

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 3000;
  int payload = argc > 2 ? std::atoi(argv[2]) : 400;
  return contextd::Run(calls, payload);
}
