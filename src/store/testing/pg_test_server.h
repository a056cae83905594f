// PgTestServer: a real PostgreSQL server for tests, started from the Debian binaries
// (/usr/lib/postgresql/<N>/bin, or $CONTEXTD_PG_BIN) in a temporary directory that the test owns,
// listening on a free 127.0.0.1 port and on a unix socket in that directory; stopped and deleted
// when the object goes. Run as root (CI), initdb and postgres run as `nobody`, since PostgreSQL
// refuses root. Durability is off (fsync=off): the tests check semantics, not disks.
// Not thread-safe to start or stop; Conninfo/CreateDatabase may be called from any thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace contextd::store::testing {

class PgTestServer {
 public:
  // Runs initdb and starts postgres; returns once it accepts connections. Unavailable with a
  // sentence saying why (no binaries, initdb or postgres failed: the log's tail is included)
  // when it cannot start.
  static absl::StatusOr<std::unique_ptr<PgTestServer>> Start();
  // Stops the server (fast shutdown, then SIGKILL after 10 s) and removes its directory.
  ~PgTestServer();
  PgTestServer(const PgTestServer&) = delete;
  PgTestServer& operator=(const PgTestServer&) = delete;

  // The one server of this process, started on first use and stopped at exit; nullptr when it
  // cannot start, with the reason in SharedError(). Test fixtures call GTEST_SKIP() then, unless
  // CONTEXTD_REQUIRE_POSTGRES=1 is set (CI with PostgreSQL installed), when they fail.
  static PgTestServer* Shared();
  static const std::string& SharedError();

  // A libpq conninfo for database `dbname` over the unix socket, as superuser "postgres".
  std::string Conninfo(const std::string& dbname) const;
  // The same over TCP on 127.0.0.1 (as a postgresql:// URL).
  std::string Url(const std::string& dbname) const;
  // Creates a new empty database with a fresh name ("t_<n>") and returns its name.
  absl::StatusOr<std::string> CreateDatabase();
  // Terminates every backend connected to `dbname` (simulates a lost connection).
  absl::Status TerminateBackends(const std::string& dbname);

  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

 private:
  PgTestServer() = default;
  absl::Status Run();
  absl::Status Admin(const std::string& sql);

  std::string bin_dir_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  int next_db_ = 0;
};

}  // namespace contextd::store::testing

// Use in a fixture's SetUp: skips (or fails, with CONTEXTD_REQUIRE_POSTGRES=1) when the shared
// server cannot start.
#define CONTEXTD_REQUIRE_PG_OR_SKIP()                                          \
  do {                                                                         \
    if (::contextd::store::testing::PgTestServer::Shared() == nullptr) {       \
      const char* req = std::getenv("CONTEXTD_REQUIRE_POSTGRES");              \
      if (req != nullptr && std::string(req) == "1") {                         \
        FAIL() << "PostgreSQL is required but cannot start: "                  \
               << ::contextd::store::testing::PgTestServer::SharedError();     \
      }                                                                        \
      GTEST_SKIP() << "PostgreSQL tests skipped: "                             \
                   << ::contextd::store::testing::PgTestServer::SharedError(); \
    }                                                                          \
  } while (0)
