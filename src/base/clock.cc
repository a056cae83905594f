#include "base/clock.h"

namespace contextd::base {

Clock::TimePoint RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::steady_clock::now());
}

int64_t RealClock::WallMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RealClock& RealClock::Get() {
  static RealClock* clock = new RealClock();
  return *clock;
}

}  // namespace contextd::base
