#include "server/retention_runner.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "base/logging.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "server/internal/engine.h"

namespace contextd::server {

store::RetentionPolicy RetentionPolicyFrom(const RetentionConfig& config) {
  store::RetentionPolicy p;
  p.trail_ms = config.trail_days * store::kDayMs;
  p.usage_detail_ms = config.usage_detail_days * store::kDayMs;
  p.conversation_ms = config.conversation_days * store::kDayMs;
  p.memory_history_ms = config.memory_history_days * store::kDayMs;
  p.batch_rows = config.batch_rows;
  return p;
}

RetentionRunner::RetentionRunner(std::unique_ptr<store::RetentionStore> store,
                                 store::RetentionPolicy policy, const base::Clock& clock,
                                 Metrics* metrics, std::function<void()> on_sessions_swept)
    : store_(std::move(store)),
      policy_(policy),
      clock_(clock),
      metrics_(metrics),
      on_sessions_swept_(std::move(on_sessions_swept)) {}

RetentionRunner::~RetentionRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RetentionRunner::Start(int64_t first_delay_ms, int64_t interval_ms) {
  thread_ = std::thread([this, first_delay_ms, interval_ms] { Loop(first_delay_ms, interval_ms); });
}

absl::StatusOr<store::RetentionReport> RetentionRunner::RunOnce() {
  std::lock_guard<std::mutex> run(run_mu_);
  absl::StatusOr<store::RetentionReport> report = store_->Sweep(policy_, clock_.WallMillis());
  if (!report.ok()) {
    base::LogError(base::StrCat("retention sweep failed: ", report.status().message()));
    if (metrics_ != nullptr) metrics_->RetentionFailed();
    return report;
  }
  base::LogInfo(base::StrCat("retention: ", store::RetentionSummary(*report)));
  // Also when nothing was deleted here: on PostgreSQL another instance may have swept (this one
  // was skipped) sessions this one still caches. One read per cached session, once a sweep.
  if (!policy_.dry_run && on_sessions_swept_) on_sessions_swept_();
  if (metrics_ != nullptr) {
    metrics_->RetentionSwept(*report);
    absl::StatusOr<store::RetentionKept> kept = store_->Kept();
    if (kept.ok()) {
      metrics_->RetentionKept(*kept);
    } else {
      base::LogWarn(base::StrCat("retention: counting what is kept: ", kept.status().message()));
    }
  }
  return report;
}

void RetentionRunner::Loop(int64_t first_delay_ms, int64_t interval_ms) {
  pthread_setname_np(pthread_self(), "contextd-retain");
  // Only CPU time nothing else wants, as the WAL checkpointer (decision 0010); each batch still
  // takes the writer, briefly, at whatever priority.
  sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  int64_t wait_ms = first_delay_ms;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stop_; });
    if (stop_) break;
    wait_ms = interval_ms;
    lock.unlock();
    try {
      RunOnce().IgnoreError();  // logged
    } catch (const std::exception& e) {
      base::LogError(base::StrCat("retention sweep threw: ", e.what()));
    } catch (...) {
      base::LogError("retention sweep threw a non-standard exception");
    }
    lock.lock();
  }
}

namespace internal {

// SQLite on a connection of its own, PostgreSQL on the pool; the first sweep a minute after start
// (not in the way of start-up), then every interval.
absl::Status StartRetention(const ServerConfig& config, Engine& engine) {
  if (config.retention.sweep_interval_s <= 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<store::RetentionStore> retention,
                   engine.backend->OpenRetentionStore());
  // A swept session may still be cached by the trail (a long-lived model conversation): it must
  // open a new root rather than append to the deleted one.
  // (The trail is built after this; the engine outlives its retention runner.)
  auto forget = [&engine] {
    engine.executor->Post([&engine] {
      if (!engine.trail) return;
      absl::StatusOr<int> forgotten = engine.trail->ForgetSweptSessions();
      if (!forgotten.ok()) {
        base::LogWarn(base::StrCat("retention: the trail could not forget swept sessions: ",
                                   forgotten.status().message()));
      }
    });
  };
  engine.retention =
      std::make_unique<RetentionRunner>(std::move(retention), RetentionPolicyFrom(config.retention),
                                        base::RealClock::Get(), &engine.metrics, std::move(forget));
  const int64_t interval_ms = config.retention.sweep_interval_s * 1000;
  engine.retention->Start(std::min<int64_t>(60'000, interval_ms), interval_ms);
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace contextd::server
