// Clock: the one source of time for engine code. RealClock reads the system clocks; FakeClock is
// advanced by tests. Both are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace contextd::base {

// Monotonic time for deadlines and timers, and wall time for what is stored or shown.
class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Duration>;

  virtual ~Clock() = default;
  // Monotonic now; never goes backwards.
  virtual TimePoint Now() const = 0;
  // Wall-clock time as milliseconds since the Unix epoch.
  virtual int64_t WallMillis() const = 0;
};

// The system clocks (steady_clock and system_clock).
class RealClock final : public Clock {
 public:
  TimePoint Now() const override;
  int64_t WallMillis() const override;
  // A process-wide instance; never destroyed.
  static RealClock& Get();
};

// A clock that moves only when Advance() is called. Starts at an arbitrary fixed point.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t wall_millis_at_start = 1'750'000'000'000)
      : wall_start_(wall_millis_at_start) {}
  TimePoint Now() const override { return TimePoint(Duration(nanos_.load())); }
  int64_t WallMillis() const override { return wall_start_ + nanos_.load() / 1'000'000; }
  // Moves time forward by `d` (must be >= 0).
  void Advance(Duration d) { nanos_.fetch_add(d.count()); }

 private:
  const int64_t wall_start_;
  std::atomic<int64_t> nanos_{1'000'000'000};
};

}  // namespace contextd::base
