// OutboxRelay: publishes the transactional outbox (decision 0027). A thread of its own reads this
// instance's committed outbox rows in order, sends each with Publisher::Send (Nats-Msg-Id = the
// event id), and deletes rows only once NATS has them (JetStream: acked; plain: flushed). It
// wakes on Wake() (after a commit that wrote rows) and every sweep interval, when it also takes
// over rows a dead instance left (OutboxStore::TakeOver), trims what could not be published for
// too long, and reports the outbox's depth. Wake and stats are thread-safe; Start and Stop are
// called once each, by the owner.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "events/publisher.h"
#include "folding/outbox_store.h"

namespace contextd::events {

struct OutboxRelayOptions {
  int batch_size = 256;               // rows read (and deleted) at a time
  int64_t sweep_interval_ms = 5'000;  // take-over, trim and stats; also the longest idle wait
  int64_t lease_ms = 15'000;          // a row's lease: taken over this long after its writer died
  int take_over_limit = 10'000;       // rows taken over per sweep at most
  int64_t max_age_ms = 86'400'000;    // rows older than this are given up (trimmed)
  int64_t max_rows = 1'000'000;       // beyond this many rows, the oldest are given up
  int64_t stop_timeout_ms = 2'000;    // Stop: longest time spent draining
  int64_t retry_min_ms = 250;         // after a failed send: 250 ms, doubling...
  int64_t retry_max_ms = 4'000;       // ... up to this
};

struct OutboxRelayHooks {
  // `n` rows were given up by Trim (reason "outbox_trimmed").
  std::function<void(std::string_view reason, int64_t n)> dropped;
  // `n` rows of another instance were taken over.
  std::function<void(int64_t n)> taken_over;
  // After each sweep: the outbox's rows and the age of the oldest (0 when empty), in seconds.
  std::function<void(int64_t rows, double oldest_age_s)> depth;
};

struct OutboxRelayStats {
  uint64_t sent = 0;        // rows sent and deleted
  uint64_t taken_over = 0;  // rows taken over from other instances
  uint64_t trimmed = 0;     // rows given up
  uint64_t failures = 0;    // failed sends, flushes and store calls
};

class OutboxRelay {
 public:
  // `store` and `publisher` must outlive the relay. `now_ms` is the wall clock (ms since the
  // epoch) the rows' created_ms and leases are in.
  OutboxRelay(folding::OutboxStore& store, Publisher& publisher, OutboxRelayOptions options,
              OutboxRelayHooks hooks, std::function<int64_t()> now_ms);
  ~OutboxRelay();
  OutboxRelay(const OutboxRelay&) = delete;
  OutboxRelay& operator=(const OutboxRelay&) = delete;

  // Starts the thread; it sweeps at once (a restart publishes what the last run left).
  void Start();
  // Rows were committed: read them now. Any thread; never blocks on the relay's work.
  void Wake();
  // Publishes what is committed for at most stop_timeout_ms, then ends the thread. What is left
  // stays in the outbox for the next start (or another instance). Idempotent.
  void Stop();

  OutboxRelayStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  void Run();
  void Sweep();
  // Waits `d`, woken early only by Stop. False once Stop's deadline passed.
  bool Backoff(std::chrono::milliseconds d);
  bool Expired();  // Stop's deadline passed. Caller holds mu_.
  void LogOnce(std::string line);

  folding::OutboxStore& store_;
  Publisher& publisher_;
  const OutboxRelayOptions options_;
  const OutboxRelayHooks hooks_;
  const std::function<int64_t()> now_ms_;
  std::thread thread_;
  std::string last_log_;  // relay thread only
  std::atomic<uint64_t> sent_{0}, taken_over_{0}, trimmed_{0}, failures_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  bool stopping_ = false;
  Clock::time_point deadline_{};
};

}  // namespace contextd::events
