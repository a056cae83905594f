#include "cli/usage_cli.h"

#include <charconv>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <vector>

#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/store_cli.h"
#include "nlohmann/json.hpp"
#include "server/config.h"

namespace contextd::cli {
namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// A whole decimal number (no sign, no spaces).
bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// The usage rows from the configured store: PostgreSQL (read only, no migration) or the SQLite
// file in the data dir.
absl::StatusOr<std::vector<store::ProjectUsage>> ReadUsage(const UsageCommand& command,
                                                           int64_t since_ms) {
  ASSIGN_OR_RETURN(std::unique_ptr<store::Backend> backend,
                   OpenCommandBackend(command.store, command.data_dir));
  return backend->UsageByProject(command.tenant, since_ms);
}

}  // namespace

absl::StatusOr<int64_t> ParseSince(std::string_view since, int64_t now_ms) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        base::StrCat("--since '", since,
                     "': expected a duration (30m, 24h, 7d), a date (2025-06-01) or unix "
                     "seconds"));
  };
  if (since.empty()) return bad();
  const char unit = since.back();
  if (unit == 'm' || unit == 'h' || unit == 'd') {
    int64_t n = 0;
    if (!ParseInt(since.substr(0, since.size() - 1), &n) || n < 0) return bad();
    const int64_t per = unit == 'm' ? 60'000 : unit == 'h' ? 3'600'000 : 86'400'000;
    return now_ms - n * per;
  }
  if (since.size() == 10 && since[4] == '-' && since[7] == '-') {
    int64_t y = 0, m = 0, d = 0;
    if (!ParseInt(since.substr(0, 4), &y) || !ParseInt(since.substr(5, 2), &m) ||
        !ParseInt(since.substr(8, 2), &d) || m < 1 || m > 12 || d < 1 || d > 31) {
      return bad();
    }
    return DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d)) * 86'400'000;
  }
  int64_t seconds = 0;
  if (!ParseInt(since, &seconds) || seconds < 0) return bad();
  return seconds * 1000;
}

int RunUsageCommand(const UsageCommand& command, std::ostream& out, std::ostream& err) {
  auto fail = [&](const absl::Status& st) {
    err << "contextd usage: " << st.message() << "\n";
    return 2;
  };
  int64_t since_ms = 0;
  if (!command.since.empty()) {
    auto parsed = ParseSince(command.since, command.now_ms);
    if (!parsed.ok()) return fail(parsed.status());
    since_ms = *parsed;
  }
  auto rows = ReadUsage(command, since_ms);
  if (!rows.ok()) return fail(rows.status());

  if (command.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const store::ProjectUsage& u : *rows) {
      list.push_back({{"tenant", u.tenant},
                      {"project", u.project},
                      {"requests", u.totals.requests},
                      {"input_tokens", u.totals.input_tokens},
                      {"cache_read_input_tokens", u.totals.cache_read_input_tokens},
                      {"cache_creation_input_tokens", u.totals.cache_creation_input_tokens},
                      {"output_tokens", u.totals.output_tokens},
                      {"last_at_ms", u.totals.last_at_ms}});
    }
    out << base::DumpJson(nlohmann::json{{"since_ms", since_ms}, {"usage", list}}, 2) << "\n";
    return 0;
  }
  if (rows->empty()) {
    out << "no model requests recorded" << (command.tenant.empty() ? "" : " for this tenant")
        << (command.since.empty() ? "" : " in this period") << "\n";
    return 0;
  }
  size_t tw = 6, pw = 7;
  for (const store::ProjectUsage& u : *rows) {
    tw = std::max(tw, u.tenant.size());
    pw = std::max(pw, u.project.size());
  }
  out << std::left << std::setw(static_cast<int>(tw) + 2) << "TENANT"
      << std::setw(static_cast<int>(pw) + 2) << "PROJECT" << std::right << std::setw(9)
      << "REQUESTS" << std::setw(14) << "INPUT" << std::setw(14) << "CACHE_READ" << std::setw(14)
      << "CACHE_WRITE" << std::setw(14) << "OUTPUT"
      << "\n";
  for (const store::ProjectUsage& u : *rows) {
    out << std::left << std::setw(static_cast<int>(tw) + 2) << u.tenant
        << std::setw(static_cast<int>(pw) + 2) << u.project << std::right << std::setw(9)
        << u.totals.requests << std::setw(14) << u.totals.input_tokens << std::setw(14)
        << u.totals.cache_read_input_tokens << std::setw(14) << u.totals.cache_creation_input_tokens
        << std::setw(14) << u.totals.output_tokens << "\n";
  }
  return 0;
}

}  // namespace contextd::cli
