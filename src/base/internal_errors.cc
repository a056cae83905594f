#include "base/internal_errors.h"

#include <map>
#include <mutex>

#include "base/logging.h"
#include "base/str_cat.h"

namespace contextd::base {
namespace {

struct Counts {
  std::mutex mu;
  std::map<std::string, int64_t, std::less<>> by_where;
};

Counts& Get() {
  static Counts* counts = new Counts();  // never destroyed: worker threads may report at exit
  return *counts;
}

}  // namespace

void ReportInternalError(std::string_view where, std::string_view what) {
  {
    Counts& c = Get();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.by_where.find(where);
    if (it == c.by_where.end()) it = c.by_where.emplace(std::string(where), 0).first;
    ++it->second;
  }
  // Logging must not throw out of a catch handler (RunCatching is noexcept).
  try {
    LogError(StrCat("internal error in ", where, ": ", what));
  } catch (...) {
  }
}

void RegisterInternalErrorPlace(std::string_view where) {
  Counts& c = Get();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.by_where.find(where) == c.by_where.end()) c.by_where.emplace(std::string(where), 0);
}

std::vector<std::pair<std::string, int64_t>> InternalErrorCounts() {
  Counts& c = Get();
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.by_where.begin(), c.by_where.end()};
}

}  // namespace contextd::base
