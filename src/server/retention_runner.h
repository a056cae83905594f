// RetentionRunner: the server's retention sweep (decision 0031) on a thread of its own at idle
// priority (SCHED_IDLE, as the WAL checkpointer), every retention.sweep_interval_s, over a
// RetentionStore with its own connection (SQLite) or the shared pool (PostgreSQL): it never runs on
// the engine executor. Each sweep logs one line and feeds the contextd_retention_* metrics; an
// error or exception of a sweep is logged and the next one runs on schedule. Thread-safe: RunOnce
// may be called from any thread (sweeps are serialized).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "server/config.h"
#include "server/metrics.h"
#include "store/retention.h"

namespace contextd::server {

// The sweep's policy from the retention: section (days to milliseconds; 0 stays forever).
store::RetentionPolicy RetentionPolicyFrom(const RetentionConfig& config);

class RetentionRunner {
 public:
  // Sweeps `store` with `policy` at `clock`'s wall time; `metrics` may be null. The thread starts
  // with Start.
  // `on_sessions_swept`, if set, runs on the sweep's thread after each sweep (not a dry run),
  // also one skipped because another instance sweeps: the server posts
  // Trail::ForgetSweptSessions to the engine from it.
  RetentionRunner(std::unique_ptr<store::RetentionStore> store, store::RetentionPolicy policy,
                  const base::Clock& clock, Metrics* metrics,
                  std::function<void()> on_sessions_swept = nullptr);
  ~RetentionRunner();  // stops the thread (waiting for the batch in progress)
  RetentionRunner(const RetentionRunner&) = delete;
  RetentionRunner& operator=(const RetentionRunner&) = delete;

  // Starts the thread: a first sweep `first_delay_ms` after start, then every `interval_ms`.
  void Start(int64_t first_delay_ms, int64_t interval_ms);
  // One sweep now (then what is kept is counted): its report, logged and counted in the metrics,
  // or its error (logged, counted as failed).
  absl::StatusOr<store::RetentionReport> RunOnce();

 private:
  void Loop(int64_t first_delay_ms, int64_t interval_ms);

  std::unique_ptr<store::RetentionStore> store_;
  const store::RetentionPolicy policy_;
  const base::Clock& clock_;
  Metrics* metrics_;
  std::function<void()> on_sessions_swept_;
  std::mutex run_mu_;  // one sweep at a time
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace contextd::server
