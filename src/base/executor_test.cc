#include "base/executor.h"

#include <atomic>
#include <future>
#include <memory>
#include <vector>

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

}  // namespace
}  // namespace contextd::base
