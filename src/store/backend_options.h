// BackendOptions: which database holds contextd's state and how this process uses it, for
// store::OpenBackend (store/backend.h). The server maps its configuration to it
// (server::ServerBackendOptions), each command likewise (cli::CommandBackendOptions). A plain
// value; no synchronisation.
#pragma once

#include <string>

namespace contextd::store {

enum class BackendKind { kSqlite, kPostgres };

struct BackendOptions {
  BackendKind kind = BackendKind::kSqlite;
  // SQLite: the database file (":memory:" for a private in-memory database).
  std::string sqlite_path;
  // SQLite: create the file's directory if it is missing.
  bool create_directories = true;
  // PostgreSQL: a libpq conninfo or URL. It may hold a password: never logged, only its redacted
  // form (Backend::Describe).
  std::string postgres_conninfo;
  // PostgreSQL: connections kept at most, shared by every store the backend opens.
  int postgres_pool_size = 8;
  // PostgreSQL: apply pending migrations at open, under an advisory lock (the server, `contextd
  // migrate|export|import`). Off: a database whose schema is older than this binary is refused
  // (FailedPrecondition naming the versions). SQLite always migrates: the file is this
  // process's.
  bool migrate = true;
  // A one-shot command rather than a server: no background threads (SQLite's WAL checkpointer
  // and search indexer; a search brings the index up to date itself).
  bool one_shot = false;
};

}  // namespace contextd::store
