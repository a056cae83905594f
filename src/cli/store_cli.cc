#include "cli/store_cli.h"

#include <libpq-fe.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "store/database.h"
#include "store/pg_database.h"
#include "store/store_transfer.h"

namespace contextd::cli {
namespace {

int Fail(std::ostream& err, const absl::Status& st, const char* command = "migrate") {
  err << "contextd " << command << ": " << st.message() << "\n";
  return 2;
}

store::StoreLocation Location(const server::ServerConfig& config) {
  store::StoreLocation l;
  l.sqlite_path = server::ResolveDataDir(config) + "/contextd.db";
  l.postgres = config.store.backend == "postgres";
  l.pg.conninfo = config.store.postgres_url;
  return l;
}

// The version before migrating: what schema_version holds (0 for a new database).
int PgVersionBefore(const std::string& conninfo) {
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 1);
  int version = 0;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c,
                         "SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 ELSE "
                         "(SELECT COALESCE(MAX(version), 0) FROM schema_version) END");
    if (PQresultStatus(r) == PGRES_TUPLES_OK) version = std::atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
  }
  PQfinish(c);
  return version;
}

}  // namespace

store::PgOptions CommandPgOptions(const server::StoreConfig& store) {
  store::PgOptions o;
  o.conninfo = store.postgres_url;
  o.pool_size = 1;
  o.migrate = false;
  return o;
}

int RunMigrateCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err) {
  if (config.store.backend == "postgres") {
    store::PgOptions o;
    o.conninfo = config.store.postgres_url;
    o.pool_size = 1;
    int before = PgVersionBefore(o.conninfo);
    auto db = store::PgDatabase::Open(o);
    if (!db.ok()) return Fail(err, db.status());
    auto version = (*db)->SchemaVersion();
    if (!version.ok()) return Fail(err, version.status());
    out << "postgres " << (*db)->redacted_conninfo() << ": schema version " << *version << " (was "
        << before << ")\n";
    return 0;
  }
  std::string path = server::ResolveDataDir(config) + "/contextd.db";
  bool existed = std::filesystem::exists(path);
  store::DatabaseOptions o;
  o.background_checkpoint_ms = 0;
  auto db = store::Database::Open(path, o);
  if (!db.ok()) return Fail(err, db.status());
  std::lock_guard<std::mutex> lock((*db)->mutex());
  auto version = (*db)->SchemaVersion();
  if (!version.ok()) return Fail(err, version.status());
  out << "sqlite " << path << ": schema version " << *version << (existed ? "" : " (new file)")
      << "\n";
  return 0;
}

int RunExportCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err) {
  store::StoreLocation from = Location(config);
  if (!from.postgres && !std::filesystem::exists(from.sqlite_path)) {
    return Fail(err, absl::NotFoundError(from.sqlite_path + " does not exist"), "export");
  }
  auto rows = store::ExportTables(from, out);
  if (!rows.ok()) return Fail(err, rows.status(), "export");
  out.flush();
  err << "contextd export: " << *rows << " rows\n";
  return 0;
}

int RunImportCommand(const server::ServerConfig& config, std::istream& in, std::ostream& err) {
  auto rows = store::ImportTables(Location(config), in);
  if (!rows.ok()) return Fail(err, rows.status(), "import");
  err << "contextd import: " << *rows << " rows\n";
  return 0;
}

}  // namespace contextd::cli
