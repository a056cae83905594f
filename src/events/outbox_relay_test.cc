// OutboxRelay against an in-memory folding::OutboxStore and a Publisher fake that can refuse:
// order, rows deleted only after NATS has them, retries, waking without polling, Stop leaving
// unsent rows, and the sweep (take-over, trim, depth). No sleeps: every wait has a condition and a
// deadline.
#include "events/outbox_relay.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace contextd::events {
namespace {

// Changes anywhere notify Changed; tests wait for a condition on it.
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
  void Changed() { cv.notify_all(); }
  bool WaitFor(const std::function<bool()>& pred) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), pred);
  }
};

class FakeOutbox final : public folding::OutboxStore {
 public:
  explicit FakeOutbox(Signal& signal) : signal_(signal) {}
  absl::Status Append(const std::vector<folding::OutboxEvent>& events) override {
    {
      std::lock_guard<std::mutex> lock(signal_.mu);
      for (const folding::OutboxEvent& e : events) rows_[++seq_] = e;
    }
    signal_.Changed();
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<folding::OutboxRow>> ListOwn(int64_t after_seq, int limit) override {
    std::lock_guard<std::mutex> lock(signal_.mu);
    ++lists_;
    std::vector<folding::OutboxRow> out;
    for (auto it = rows_.upper_bound(after_seq); it != rows_.end() && out.size() < size_t(limit);
         ++it) {
      out.push_back(folding::OutboxRow{it->first, it->second});
    }
    return out;
  }
  absl::Status Remove(const std::vector<int64_t>& seqs) override {
    {
      std::lock_guard<std::mutex> lock(signal_.mu);
      for (int64_t s : seqs) rows_.erase(s);
    }
    signal_.Changed();
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> TakeOver(int64_t, int64_t, int) override {
    std::lock_guard<std::mutex> lock(signal_.mu);
    ++sweeps_;
    int64_t n = orphans_;
    orphans_ = 0;
    return n;
  }
  absl::StatusOr<int64_t> Trim(int64_t, int64_t) override { return trim_; }
  absl::StatusOr<folding::OutboxStats> Stats() override {
    std::lock_guard<std::mutex> lock(signal_.mu);
    folding::OutboxStats s;
    s.rows = static_cast<int64_t>(rows_.size());
    s.oldest_created_ms = rows_.empty() ? 0 : rows_.begin()->second.created_ms;
    return s;
  }
  const std::string& owner() const override { return owner_; }

  size_t size() { return rows_.size(); }  // under signal_.mu
  int64_t orphans_ = 0;
  int64_t trim_ = 0;
  int sweeps_ = 0;
  int lists_ = 0;

 private:
  Signal& signal_;
  std::map<int64_t, folding::OutboxEvent> rows_;
  int64_t seq_ = 0;
  std::string owner_;
};

class FakePublisher final : public Publisher {
 public:
  explicit FakePublisher(Signal& signal) : signal_(signal) {}
  void Enqueue(EventMessage) override {}
  ConnectionState state() const override { return ConnectionState::kConnected; }
  PublisherStats stats() const override { return {}; }
  void Stop() override {}
  absl::Status Send(const EventMessage& m) override {
    std::lock_guard<std::mutex> lock(signal_.mu);
    if (refuse_sends_ > 0) {
      --refuse_sends_;
      return absl::UnavailableError("not connected");
    }
    pending_.push_back(m.id);
    return absl::OkStatus();
  }
  absl::Status Flush() override {
    {
      std::lock_guard<std::mutex> lock(signal_.mu);
      if (refuse_flushes_ > 0) {
        --refuse_flushes_;
        pending_.clear();
        return absl::UnavailableError("flush timed out");
      }
      delivered_.insert(delivered_.end(), pending_.begin(), pending_.end());
      pending_.clear();
    }
    signal_.Changed();
    return absl::OkStatus();
  }
  int refuse_sends_ = 0;    // under signal_.mu
  int refuse_flushes_ = 0;  // under signal_.mu
  std::vector<std::string> delivered_;

 private:
  Signal& signal_;
  std::vector<std::string> pending_;
};

folding::OutboxEvent Event(std::string id, int64_t created_ms = 1'000) {
  folding::OutboxEvent e;
  e.id = std::move(id);
  e.type = "branch.created";
  e.subject = "contextd.a.b.c.branch.created";
  e.payload = "{}";
  e.created_ms = created_ms;
  return e;
}

class OutboxRelayTest : public ::testing::Test {
 protected:
  void Start(OutboxRelayOptions options = Fast()) {
    OutboxRelayHooks hooks;
    hooks.dropped = [this](std::string_view reason, int64_t n) {
      std::lock_guard<std::mutex> lock(signal_.mu);
      dropped_[std::string(reason)] += n;
    };
    hooks.taken_over = [this](int64_t n) {
      std::lock_guard<std::mutex> lock(signal_.mu);
      taken_over_ += n;
    };
    hooks.depth = [this](int64_t rows, double age) {
      {
        std::lock_guard<std::mutex> lock(signal_.mu);
        depth_rows_ = rows;
        depth_age_ = age;
        ++depth_reports_;
      }
      signal_.Changed();
    };
    relay_ = std::make_unique<OutboxRelay>(store_, publisher_, options, std::move(hooks),
                                           [] { return int64_t{11'000}; });
    relay_->Start();
  }
  static OutboxRelayOptions Fast() {
    OutboxRelayOptions o;
    o.sweep_interval_ms = 3'600'000;  // no sweep but the first: waking must be enough
    o.retry_min_ms = 1;
    o.retry_max_ms = 2;
    o.batch_size = 2;
    return o;
  }
  std::vector<std::string> Delivered() {
    std::lock_guard<std::mutex> lock(signal_.mu);
    return publisher_.delivered_;
  }

  Signal signal_;
  FakeOutbox store_{signal_};
  FakePublisher publisher_{signal_};
  std::unique_ptr<OutboxRelay> relay_;
  std::map<std::string, int64_t> dropped_;
  int64_t taken_over_ = 0;
  int64_t depth_rows_ = -1;
  double depth_age_ = -1;
  int depth_reports_ = 0;
};

TEST_F(OutboxRelayTest, PublishesWhatTheLastRunLeftInOrderThenWhatItIsWokenFor) {
  ASSERT_TRUE(store_.Append({Event("ev_1"), Event("ev_2"), Event("ev_3")}).ok());
  Start();
  ASSERT_TRUE(signal_.WaitFor([&] { return store_.size() == 0; }));
  EXPECT_EQ(Delivered(), (std::vector<std::string>{"ev_1", "ev_2", "ev_3"}));
  ASSERT_TRUE(store_.Append({Event("ev_4")}).ok());
  relay_->Wake();
  ASSERT_TRUE(signal_.WaitFor([&] { return store_.size() == 0; }));
  EXPECT_EQ(Delivered(), (std::vector<std::string>{"ev_1", "ev_2", "ev_3", "ev_4"}));
  EXPECT_EQ(relay_->stats().sent, 4u);
}

TEST_F(OutboxRelayTest, KeepsRowsUntilNatsHasThemAndRetriesInOrder) {
  {
    std::lock_guard<std::mutex> lock(signal_.mu);
    publisher_.refuse_sends_ = 3;
    publisher_.refuse_flushes_ = 1;
  }
  ASSERT_TRUE(store_.Append({Event("ev_1"), Event("ev_2"), Event("ev_3")}).ok());
  Start();
  ASSERT_TRUE(signal_.WaitFor([&] { return store_.size() == 0; }));
  // Each event reached NATS once (a refused flush had delivered nothing), in order.
  EXPECT_EQ(Delivered(), (std::vector<std::string>{"ev_1", "ev_2", "ev_3"}));
  EXPECT_GE(relay_->stats().failures, 1u);
}

TEST_F(OutboxRelayTest, StopLeavesWhatCouldNotBeSentInTheOutbox) {
  {
    std::lock_guard<std::mutex> lock(signal_.mu);
    publisher_.refuse_sends_ = 1'000'000'000;
  }
  ASSERT_TRUE(store_.Append({Event("ev_1"), Event("ev_2")}).ok());
  OutboxRelayOptions o = Fast();
  o.stop_timeout_ms = 50;
  Start(o);
  ASSERT_TRUE(signal_.WaitFor([&] { return depth_reports_ > 0; }));
  auto start = std::chrono::steady_clock::now();
  relay_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::lock_guard<std::mutex> lock(signal_.mu);
  EXPECT_EQ(store_.size(), 2u);
  EXPECT_TRUE(publisher_.delivered_.empty());
}

TEST_F(OutboxRelayTest, SweepTakesOverTrimsAndReportsDepth) {
  store_.orphans_ = 5;
  store_.trim_ = 2;
  {
    std::lock_guard<std::mutex> lock(signal_.mu);
    publisher_.refuse_sends_ = 1'000'000'000;  // rows stay: the depth is theirs
  }
  ASSERT_TRUE(store_.Append({Event("ev_1", 1'000), Event("ev_2", 5'000)}).ok());
  Start();
  ASSERT_TRUE(signal_.WaitFor([&] { return depth_reports_ > 0; }));
  relay_->Stop();
  std::lock_guard<std::mutex> lock(signal_.mu);
  EXPECT_EQ(taken_over_, 5);
  EXPECT_EQ(dropped_["outbox_trimmed"], 2);
  EXPECT_EQ(depth_rows_, 2);
  EXPECT_DOUBLE_EQ(depth_age_, 10.0);  // now 11'000 ms, oldest created at 1'000
}

}  // namespace
}  // namespace contextd::events
