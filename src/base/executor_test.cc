#include "base/executor.h"

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/foreign_text.h"
#include "base/internal_errors.h"
#include "gtest/gtest.h"

namespace contextd::base {
namespace {

using std::chrono::seconds;

TEST(ManualExecutorTest, RunsPostedTasksInOrder) {
  FakeClock clock;
  ManualExecutor ex(clock);
  std::vector<int> order;
  ex.Post([&] { order.push_back(1); });
  ex.Post([&] { order.push_back(2); });
  EXPECT_EQ(ex.RunUntilIdle(), 2);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(ManualExecutorTest, TimersFireOnlyWhenClockReachesThem) {
  FakeClock clock;
  ManualExecutor ex(clock);
  std::vector<int> fired;
  ex.PostAfter(seconds(10), [&] { fired.push_back(10); });
  ex.PostAfter(seconds(5), [&] { fired.push_back(5); });
  TimerId cancelled = ex.PostAfter(seconds(7), [&] { fired.push_back(7); });
  EXPECT_EQ(ex.RunUntilIdle(), 0);
  EXPECT_TRUE(ex.CancelTimer(cancelled));
  EXPECT_FALSE(ex.CancelTimer(cancelled));
  ex.AdvanceAndRun(seconds(6));
  EXPECT_EQ(fired, (std::vector<int>{5}));
  ex.AdvanceAndRun(seconds(6));
  EXPECT_EQ(fired, (std::vector<int>{5, 10}));
}

TEST(ThreadExecutorTest, RunSyncRunsOnTheExecutorThread) {
  ThreadExecutor ex;
  bool in = false;
  ex.RunSync([&] { in = ex.InExecutor(); });
  EXPECT_TRUE(in);
  EXPECT_FALSE(ex.InExecutor());
}

// A task dropped at Stop whose destruction posts (like a session's last reference) must not
// deadlock the loop.
TEST(ThreadExecutorTest, StopDropsQueuedTasksWhoseDestructionPosts) {
  ThreadExecutor ex;
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  bool ran = false;
  ex.Post([open] { open.wait(); });
  ex.Post([&ex] { ex.Stop(); });  // from the loop itself: only asks it to end
  {
    std::shared_ptr<int> posts_when_destroyed(new int(0), [&ex](int* p) {
      delete p;
      ex.Post([] {});
    });
    ex.Post([posts_when_destroyed, &ran] { ran = true; });
  }
  gate.set_value();
  ex.Stop();
  EXPECT_FALSE(ran);
}

TEST(ThreadExecutorTest, ManyPostersOneOwner) {
  ThreadExecutor ex;
  int counter = 0;  // Touched only on the executor: no data race (checked under tsan).
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) ex.Post([&] { ++counter; });
    });
  }
  for (auto& t : threads) t.join();
  int seen = 0;
  ex.RunSync([&] { seen = counter; });
  EXPECT_EQ(seen, 4000);
}

int64_t ExecutorErrors() {
  for (const auto& [where, n] : InternalErrorCounts()) {
    if (where == "executor") return n;
  }
  return 0;
}

TEST(ThreadExecutorTest, ATaskThatThrowsIsCountedAndTheLoopGoesOn) {
  ThreadExecutor ex;
  const int64_t before = ExecutorErrors();
  // What the throwing task holds is released (an HTTP responder then answers 500).
  auto held = std::make_shared<int>(1);
  std::weak_ptr<int> watch = held;
  ex.Post([held = std::move(held)] { throw std::runtime_error("boom"); });
  ex.Post([] { throw 42; });  // not a std::exception
  std::promise<int> next;
  ex.Post([&] { next.set_value(7); });
  EXPECT_EQ(next.get_future().get(), 7);
  EXPECT_EQ(ExecutorErrors(), before + 2);
  ex.RunSync([] {});
  EXPECT_TRUE(watch.expired());
  // RunSync returns even when its task throws.
  ex.RunSync([] { throw std::logic_error("sync boom"); });
  EXPECT_EQ(ExecutorErrors(), before + 3);
}

TEST(ManualExecutorTest, ATaskThatThrowsIsCountedAndTheRestRun) {
  FakeClock clock;
  ManualExecutor ex(clock);
  const int64_t before = ExecutorErrors();
  std::vector<int> order;
  ex.Post([&] { order.push_back(1); });
  ex.PostAfter(seconds(1), [] { throw std::runtime_error("timer boom"); });
  ex.Post([] { throw std::runtime_error("boom"); });
  ex.Post([&] { order.push_back(2); });
  EXPECT_EQ(ex.RunUntilIdle(), 3);
  EXPECT_EQ(ex.AdvanceAndRun(seconds(1)), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(ExecutorErrors(), before + 2);
}

int64_t ErrorsIn(const std::string& where) {
  for (const auto& [w, n] : InternalErrorCounts()) {
    if (w == where) return n;
  }
  return 0;
}

TEST(RunLoopCatchingTest, AThrowingLoopStartsAgainUntilItReturns) {
  int runs = 0;
  std::thread worker([&] {
    RunLoopCatching("test_loop", [&] {
      if (++runs < 3) throw std::runtime_error("loop bug");
    });
  });
  worker.join();
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(ErrorsIn("test_loop"), 2);
}

TEST(RunLoopCatchingTest, ALoopThatAlwaysThrowsEndsItsThreadAfterTheLimit) {
  int runs = 0;
  std::thread worker([&] {
    RunLoopCatching("test_loop_always", [&] {
      ++runs;
      throw std::runtime_error("always");
    });
  });
  worker.join();
  EXPECT_EQ(runs, kMaxLoopRestarts + 1);
  EXPECT_EQ(ErrorsIn("test_loop_always"), kMaxLoopRestarts + 2);  // each failure, then the end
}

TEST(ForeignTextTest, ReplacesEveryIllFormedByte) {
  EXPECT_EQ(ToValidUtf8("plain \xC3\xA9"), "plain \xC3\xA9");
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));
  EXPECT_EQ(ToValidUtf8("a\xFF"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(ToValidUtf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // truncated
  EXPECT_EQ(ToValidUtf8(std::string("\0x", 2)), std::string("\0x", 2));
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\x80\xBF\xFE\xF8\x88\x80\x80\x80")));
}

}  // namespace
}  // namespace contextd::base
