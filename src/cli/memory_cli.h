// `contextd memory list|show|search|export|import|retire`: the ReasoningBank straight from the
// configured store: the SQLite file in the data dir (safe while a server runs, thanks to WAL) or
// PostgreSQL (store.backend: postgres; never migrated by these commands). export/import move a
// bank as JSON Lines (one item per line, history not included), so a team can share one.
// Single-threaded; not for use inside the server.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "server/config.h"

namespace contextd::cli {

struct MemoryCommand {
  std::string command;   // "list", "show", "search", "export", "import" or "retire"
  std::string data_dir;  // empty: the default data dir
  std::string arg;       // show/retire: the memory id; search: the query; import: file ("-": stdin)
  std::string tenant = "local";
  std::string project = "default";
  std::string status;      // list/export: only this status (empty: all)
  std::string reason;      // retire
  std::string rules_file;  // import: scrub with these rules (gitleaks TOML) on top of the defaults
  int64_t limit = 50;      // list/search
  bool all_tenants = false;   // list/export: every tenant and project
  server::StoreConfig store;  // backend "postgres": store.postgres_url instead of the data dir
  bool org_across_tenants = false;  // search: as memory.org_across_tenants
  bool json = false;  // show: the item, its history and its injections as one JSON object
};

// Runs `command`, printing to `out` and errors to `err` (import reads `in` for "-"). Returns the
// process exit code: 0 on success, 1 when an import skipped or refused lines, 2 on error (no
// database, unknown id, bad arguments, database failure).
int RunMemoryCommand(const MemoryCommand& command, std::istream& in, std::ostream& out,
                     std::ostream& err);

}  // namespace contextd::cli
