#include "events/outbox_relay.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/str_cat.h"

namespace contextd::events {

OutboxRelay::OutboxRelay(folding::OutboxStore& store, Publisher& publisher,
                         OutboxRelayOptions options, OutboxRelayHooks hooks,
                         std::function<int64_t()> now_ms)
    : store_(store),
      publisher_(publisher),
      options_(options),
      hooks_(std::move(hooks)),
      now_ms_(std::move(now_ms)) {}

OutboxRelay::~OutboxRelay() { Stop(); }

void OutboxRelay::Start() {
  thread_ = std::thread([this] { base::RunLoopCatching("outbox_relay", [this] { Run(); }); });
}

void OutboxRelay::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  woken_ = true;
  cv_.notify_one();
}

void OutboxRelay::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    deadline_ = Clock::now() + std::chrono::milliseconds(options_.stop_timeout_ms);
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

OutboxRelayStats OutboxRelay::stats() const {
  OutboxRelayStats s;
  s.sent = sent_.load();
  s.taken_over = taken_over_.load();
  s.trimmed = trimmed_.load();
  s.failures = failures_.load();
  return s;
}

bool OutboxRelay::Expired() { return stopping_ && Clock::now() >= deadline_; }

bool OutboxRelay::Backoff(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point until = Clock::now() + d;
  if (stopping_ && deadline_ < until) until = deadline_;
  cv_.wait_until(lock, until, [&] { return Expired(); });
  return !Expired();
}

void OutboxRelay::LogOnce(std::string line) {
  ++failures_;
  if (line == last_log_) return;
  base::LogWarn(line);
  last_log_ = std::move(line);
}

void OutboxRelay::Sweep() {
  const int64_t now = now_ms_();
  auto taken = store_.TakeOver(now, options_.lease_ms, options_.take_over_limit);
  if (!taken.ok()) {
    LogOnce(base::StrCat("events outbox: taking over rows: ", taken.status().message()));
  } else if (*taken > 0) {
    taken_over_ += static_cast<uint64_t>(*taken);
    if (hooks_.taken_over) hooks_.taken_over(*taken);
    base::LogInfo(base::StrCat("events outbox: took over ", *taken,
                               " event(s) another instance left unpublished"));
  }
  auto trimmed = store_.Trim(now - options_.max_age_ms, options_.max_rows);
  if (!trimmed.ok()) {
    LogOnce(base::StrCat("events outbox: trimming: ", trimmed.status().message()));
  } else if (*trimmed > 0) {
    trimmed_ += static_cast<uint64_t>(*trimmed);
    if (hooks_.dropped) hooks_.dropped("outbox_trimmed", *trimmed);
    base::LogWarn(base::StrCat("events outbox: gave up ", *trimmed,
                               " event(s) that could not be published in time (older than ",
                               options_.max_age_ms / 1000, " s or beyond ", options_.max_rows,
                               " rows)"));
  }
  auto stats = store_.Stats();
  if (!stats.ok()) {
    LogOnce(base::StrCat("events outbox: stats: ", stats.status().message()));
  } else if (hooks_.depth) {
    double age =
        stats->oldest_created_ms == 0
            ? 0.0
            : static_cast<double>(std::max<int64_t>(0, now - stats->oldest_created_ms)) / 1000.0;
    hooks_.depth(stats->rows, age);
  }
}

void OutboxRelay::Run() {
  // Rows above the cursor are unsent; it restarts from 0 after each sweep, so rows committed out
  // of seq order (PostgreSQL: two writers of one instance) or taken over are read too. Removed
  // rows are never listed again (folding::OutboxStore::ListOwn), so a restart of the cursor resends
  // none.
  int64_t cursor = 0;
  Clock::time_point next_sweep = Clock::now();
  std::chrono::milliseconds backoff(options_.retry_min_ms);
  while (true) {
    bool stopping = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (Expired()) break;
      stopping = stopping_;
      woken_ = false;
    }
    if (!stopping && Clock::now() >= next_sweep) {
      Sweep();
      cursor = 0;
      next_sweep = Clock::now() + std::chrono::milliseconds(options_.sweep_interval_ms);
    }
    auto rows = store_.ListOwn(cursor, options_.batch_size);
    if (!rows.ok()) {
      LogOnce(base::StrCat("events outbox: reading: ", rows.status().message()));
      if (!Backoff(backoff)) break;
      backoff = std::min(backoff * 2, std::chrono::milliseconds(options_.retry_max_ms));
      continue;
    }
    if (rows->empty()) {
      if (stopping) break;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next_sweep, [&] { return woken_ || stopping_; });
      continue;
    }
    std::vector<int64_t> sent;
    bool failed = false;
    for (const folding::OutboxRow& row : *rows) {
      EventMessage m{row.event.id, row.event.type, row.event.subject, row.event.payload};
      absl::Status s = publisher_.Send(m);
      if (!s.ok()) {
        LogOnce(base::StrCat("events outbox: ", s.message(), " (kept; retrying)"));
        failed = true;
        break;
      }
      sent.push_back(row.seq);
      std::lock_guard<std::mutex> lock(mu_);
      if (Expired()) break;
    }
    if (!sent.empty()) {
      absl::Status flushed = publisher_.Flush();
      if (!flushed.ok()) {
        // Not known to have arrived: kept, sent again (plain NATS subscribers may see it twice).
        LogOnce(base::StrCat("events outbox: ", flushed.message(), " (kept; retrying)"));
        sent.clear();
        failed = true;
      }
    }
    if (!sent.empty()) {
      cursor = sent.back();
      sent_ += sent.size();
      absl::Status removed = store_.Remove(sent);
      // Left in the table: sent again after the next sweep (JetStream keeps one copy).
      if (!removed.ok())
        LogOnce(base::StrCat("events outbox: deleting sent rows: ", removed.message()));
    }
    if (failed) {
      if (!Backoff(backoff)) break;
      backoff = std::min(backoff * 2, std::chrono::milliseconds(options_.retry_max_ms));
    } else {
      backoff = std::chrono::milliseconds(options_.retry_min_ms);
      last_log_.clear();
    }
  }
}

}  // namespace contextd::events
