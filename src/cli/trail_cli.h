// `contextd trail list|show|unfold|export|prune`: reads the trail and the branches straight from
// the configured store: the SQLite file in the data dir (also after a crash, with branches still
// 'active' there; safe while a server runs, thanks to WAL), or the PostgreSQL database of
// store.backend: postgres (read only; safe while instances run). Single-threaded; not for use
// inside the server. `prune` runs one retention sweep (decision 0031) with the retention: settings.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "server/config.h"

namespace contextd::cli {

struct TrailCommand {
  std::string command;        // "list", "show", "unfold", "export" or "prune"
  std::string data_dir;       // empty: the default data dir (SQLite)
  server::StoreConfig store;  // backend "postgres": read store.postgres_url instead of the data dir
  std::string id;             // show: session scope id; unfold: scope id; export: optional session
  int64_t offset = 0;         // unfold
  int64_t limit = 20;         // unfold
  int depth = -1;             // show: branches at depth 0 to this one open (-1: all)
  // prune: the windows (retention: section), --dry-run, --older-than (a duration: 30m, 24h, 7d;
  // replaces retention.trail_days), --vacuum (SQLite: switch a file made before incremental
  // vacuum, with one VACUUM), and the wall clock.
  server::RetentionConfig retention;
  bool dry_run = false;
  std::string older_than;
  bool vacuum = false;
  int64_t now_ms = 0;
};

// Runs `command`, printing to `out` (JSON for export) and errors to `err`. Returns the process
// exit code: 0 on success, 2 on error (no database, unknown id, database failure).
int RunTrailCommand(const TrailCommand& command, std::ostream& out, std::ostream& err);

}  // namespace contextd::cli
