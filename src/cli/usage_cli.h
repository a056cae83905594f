// `contextd usage`: the model gateway's usage per tenant and project (requests; input, cache
// read, cache write and output tokens), read straight from the configured store: the SQLite file
// in the data dir (safe while a server runs, thanks to WAL) or, with store.backend: postgres, the
// database every instance writes. Single-threaded; not for use inside the server.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/config.h"

namespace contextd::cli {

struct UsageCommand {
  std::string data_dir;       // empty: the default data dir (SQLite)
  server::StoreConfig store;  // backend "postgres": read store.postgres_url instead
  std::string tenant;         // empty: every tenant
  std::string since;          // empty: all; else see ParseSince
  bool json = false;          // one JSON object {"usage":[...]} instead of a table
  int64_t now_ms = 0;         // the current unix time in ms (relative --since)
};

// `--since`: "30m", "24h", "7d" (before `now_ms`), a date "2025-06-01" (UTC midnight), or unix
// seconds. Returns unix ms. InvalidArgument naming the accepted forms otherwise.
absl::StatusOr<int64_t> ParseSince(std::string_view since, int64_t now_ms);

// Runs `command`, printing to `out` and errors to `err`. Returns 0 on success (also with no
// usage), 2 on error (no database, bad --since, database failure).
int RunUsageCommand(const UsageCommand& command, std::ostream& out, std::ostream& err);

}  // namespace contextd::cli
