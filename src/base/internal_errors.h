// Internal errors: exceptions that escaped a task, a route handler or a worker thread's loop and
// were caught at that boundary instead of ending the process. Each is logged and counted under a
// `where` label ("executor", "http", "model_worker", ...), which /metrics exposes as
// contextd_internal_errors_total{where=...}. Process-wide; thread-safe.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace contextd::base {

// Logs "internal error in <where>: <what>" and adds one to the count of `where`.
void ReportInternalError(std::string_view where, std::string_view what);

// The count of every `where` reported so far (and of every one pre-registered with
// RegisterInternalErrorPlace), sorted by label.
std::vector<std::pair<std::string, int64_t>> InternalErrorCounts();

// Makes `where` appear in InternalErrorCounts() at zero before its first error.
void RegisterInternalErrorPlace(std::string_view where);

// Runs `fn()`. An exception it throws is reported under `where` (see ReportInternalError) and
// swallowed. Returns true when `fn` returned normally.
template <typename Fn>
bool RunCatching(std::string_view where, Fn&& fn) noexcept {
  try {
    fn();
    return true;
  } catch (const std::exception& e) {
    ReportInternalError(where, e.what());
  } catch (...) {
    ReportInternalError(where, "unknown exception");
  }
  return false;
}

// How often RunLoopCatching starts a loop again before it lets its thread end.
inline constexpr int kMaxLoopRestarts = 100;

// The body of a worker thread: runs `loop()` until it returns normally. When it throws, the
// exception is reported under `where` and the loop starts again from its top (where each loop
// waits for work or for its interval), at most kMaxLoopRestarts times.
template <typename Fn>
void RunLoopCatching(std::string_view where, Fn&& loop) noexcept {
  for (int restarts = 0; !RunCatching(where, loop); ++restarts) {
    if (restarts == kMaxLoopRestarts) {
      ReportInternalError(where, "the thread's loop failed too often; the thread ends");
      return;
    }
  }
}

}  // namespace contextd::base
