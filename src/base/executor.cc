#include "base/executor.h"

#include <pthread.h>

#include "base/internal_errors.h"

namespace contextd::base {

void QueueExecutorBase::Post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

TimerId QueueExecutorBase::PostAt(Clock::TimePoint when, Task task) {
  TimerId id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_timer_++;
    timers_.emplace(std::make_pair(when, id), std::move(task));
    timer_due_.emplace(id, when);
  }
  cv_.notify_one();
  return id;
}

bool QueueExecutorBase::CancelTimer(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = timer_due_.find(id);
  if (it == timer_due_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  timer_due_.erase(it);
  return true;
}

void QueueExecutorBase::MoveDueTimersLocked(Clock::TimePoint now) {
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    timer_due_.erase(node.key().second);
    queue_.push_back(std::move(node.mapped()));
  }
}

ThreadExecutor::ThreadExecutor(std::string where) : where_(std::move(where)) {
  thread_ = std::thread([this] { Loop(); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return thread_id_ != std::thread::id(); });
}

ThreadExecutor::~ThreadExecutor() { Stop(); }

bool ThreadExecutor::InExecutor() const { return std::this_thread::get_id() == thread_id_; }

void ThreadExecutor::Post(Task task) {
  QueueExecutorBase::Post(std::move(task));
  cv_.notify_all();
}

TimerId ThreadExecutor::PostAt(Clock::TimePoint when, Task task) {
  TimerId id = QueueExecutorBase::PostAt(when, std::move(task));
  cv_.notify_all();
  return id;
}

void ThreadExecutor::RunSync(const Task& task) {
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  Post([&] {
    RunCatching(where_, task);
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
    done_cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return done; });
}

void ThreadExecutor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

void ThreadExecutor::Loop() {
  // Named for ps, top and perf (bench/http/pairs.sh reads this thread's CPU time by its name).
  pthread_setname_np(pthread_self(), "contextd-exec");
  std::unique_lock<std::mutex> lock(mu_);
  thread_id_ = std::this_thread::get_id();
  cv_.notify_all();
  while (!stopping_) {
    MoveDueTimersLocked(clock().Now());
    if (!queue_.empty()) {
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // A task that throws is reported and dropped; the executor goes on with the next one.
      // Destroying the task releases what it held (an HTTP responder answers 500 then).
      RunCatching(where_, task);
      task = nullptr;
      lock.lock();
      continue;
    }
    if (timers_.empty()) {
      cv_.wait(lock);
    } else {
      auto due = timers_.begin()->first.first;
      cv_.wait_until(lock, std::chrono::steady_clock::time_point(
                               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   due.time_since_epoch())));
    }
  }
  // Drop what never ran outside the lock: destroying a task may post another (a session's
  // destructor posts its unregistration), which would deadlock on mu_; such posts are dropped
  // the same way.
  for (;;) {
    decltype(queue_) queue;
    decltype(timers_) timers;
    queue.swap(queue_);
    timers.swap(timers_);
    timer_due_.clear();
    if (queue.empty() && timers.empty()) break;
    lock.unlock();
    queue.clear();
    timers.clear();
    lock.lock();
  }
}

int ManualExecutor::RunUntilIdle() {
  int ran = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    MoveDueTimersLocked(clock_.Now());
    if (queue_.empty()) break;
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    running_ = true;
    RunCatching("executor", task);
    running_ = false;
    task = nullptr;
    ++ran;
    lock.lock();
  }
  return ran;
}

int ManualExecutor::AdvanceAndRun(Clock::Duration d) {
  clock_.Advance(d);
  return RunUntilIdle();
}

}  // namespace contextd::base
