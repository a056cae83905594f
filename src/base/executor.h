// Executor: the single owner of engine state. Work is posted to it from any thread and runs one
// task at a time, in order; timers fire on it by its Clock. ThreadExecutor runs on its own thread
// with the real clock; ManualExecutor runs only when a test drives it (with a FakeClock).
// A task that throws is logged and counted (base/internal_errors.h, where="executor"), then
// destroyed; the executor goes on. All methods are thread-safe unless noted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "base/clock.h"

namespace contextd::base {

using TimerId = uint64_t;

class Executor {
 public:
  using Task = std::function<void()>;
  virtual ~Executor() = default;

  // Queues `task` to run on the executor after the tasks already queued.
  virtual void Post(Task task) = 0;
  // Runs `task` on the executor once clock().Now() >= `when`. Returns an id for CancelTimer.
  virtual TimerId PostAt(Clock::TimePoint when, Task task) = 0;
  // Cancels a timer that has not fired; returns false if it already fired or never existed.
  virtual bool CancelTimer(TimerId id) = 0;
  // True when called from inside a task running on this executor.
  virtual bool InExecutor() const = 0;
  // The clock that drives this executor's timers.
  virtual const Clock& clock() const = 0;

  // Convenience: PostAt(Now() + delay).
  TimerId PostAfter(Clock::Duration delay, Task task) {
    return PostAt(clock().Now() + delay, std::move(task));
  }
};

// Shared queue and timer bookkeeping for the two implementations below.
class QueueExecutorBase : public Executor {
 public:
  void Post(Task task) override;
  TimerId PostAt(Clock::TimePoint when, Task task) override;
  bool CancelTimer(TimerId id) override;

 protected:
  // Pops every due timer into the run queue. Caller holds mu_.
  void MoveDueTimersLocked(Clock::TimePoint now);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  // Ordered by (due time, id) so that equal deadlines fire in creation order.
  std::map<std::pair<Clock::TimePoint, TimerId>, Task> timers_;
  std::map<TimerId, Clock::TimePoint> timer_due_;
  TimerId next_timer_ = 1;
};

// Runs tasks on one dedicated thread using the real clock. Stop() (or the destructor) drains no
// further work: tasks still queued are dropped, timers are discarded.
class ThreadExecutor final : public QueueExecutorBase {
 public:
  // `where` labels the tasks that throw in contextd_internal_errors_total (base/internal_errors.h):
  // the engine's is "executor"; a worker names its job ("memory_worker").
  explicit ThreadExecutor(std::string where = "executor");
  ~ThreadExecutor() override;
  ThreadExecutor(const ThreadExecutor&) = delete;
  ThreadExecutor& operator=(const ThreadExecutor&) = delete;

  bool InExecutor() const override;
  const Clock& clock() const override { return RealClock::Get(); }
  void Post(Task task) override;
  TimerId PostAt(Clock::TimePoint when, Task task) override;
  // Runs `task` on the executor and waits for it. Must not be called from the executor.
  void RunSync(const Task& task);
  // Stops the thread after the task in progress. Idempotent.
  void Stop();

 private:
  void Loop();
  const std::string where_;
  bool stopping_ = false;
  std::thread thread_;
  std::thread::id thread_id_;
};

// Runs tasks only inside RunUntilIdle()/AdvanceAndRun(), on the calling thread. Not for use from
// several threads at once while running; Post may be called from any thread.
class ManualExecutor final : public QueueExecutorBase {
 public:
  explicit ManualExecutor(FakeClock& clock) : clock_(clock) {}
  bool InExecutor() const override { return running_; }
  const Clock& clock() const override { return clock_; }
  // Runs queued tasks and due timers until none is left. Returns how many ran.
  int RunUntilIdle();
  // Advances the fake clock by `d`, then RunUntilIdle().
  int AdvanceAndRun(Clock::Duration d);

 private:
  FakeClock& clock_;
  bool running_ = false;
};

}  // namespace contextd::base
