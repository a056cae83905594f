#include "cli/store_cli.h"

#include <filesystem>
#include <string>

#include "base/str_cat.h"
#include "store/store_transfer.h"

namespace contextd::cli {
namespace {

int Fail(std::ostream& err, const absl::Status& st, const char* command = "migrate") {
  err << "contextd " << command << ": " << st.message() << "\n";
  return 2;
}

// Export and import migrate the database they open, as a serving instance would.
store::BackendOptions TransferOptions(const server::ServerConfig& config, bool create) {
  return CommandBackendOptions(config.store, config.data_dir, /*migrate=*/true, create);
}

}  // namespace

store::BackendOptions CommandBackendOptions(const server::StoreConfig& store,
                                            const std::string& data_dir, bool migrate,
                                            bool create) {
  server::ServerConfig config;
  config.data_dir = data_dir;
  config.store = store;
  store::BackendOptions o = server::ServerBackendOptions(config);
  o.create_directories = create;
  o.postgres_pool_size = 1;
  o.migrate = migrate;
  o.one_shot = true;
  return o;
}

absl::StatusOr<std::unique_ptr<store::Backend>> OpenCommandBackend(const server::StoreConfig& store,
                                                                   const std::string& data_dir,
                                                                   bool create) {
  store::BackendOptions o = CommandBackendOptions(store, data_dir, false, create);
  std::error_code ec;
  if (o.kind == store::BackendKind::kSqlite && !create &&
      !std::filesystem::exists(o.sqlite_path, ec)) {
    return absl::NotFoundError(base::StrCat("no contextd database at ", o.sqlite_path));
  }
  return store::OpenBackend(o);
}

int RunMigrateCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err) {
  auto migrated = store::MigrateStore(
      CommandBackendOptions(config.store, config.data_dir, /*migrate=*/true, /*create=*/true));
  if (!migrated.ok()) return Fail(err, migrated.status());
  out << migrated->backend << " " << migrated->where << ": schema version " << migrated->version;
  if (migrated->was) out << " (was " << *migrated->was << ")";
  out << (migrated->new_file ? " (new file)" : "") << "\n";
  return 0;
}

int RunExportCommand(const server::ServerConfig& config, std::ostream& out, std::ostream& err) {
  store::BackendOptions from = TransferOptions(config, /*create=*/false);
  if (from.kind == store::BackendKind::kSqlite && !std::filesystem::exists(from.sqlite_path)) {
    return Fail(err, absl::NotFoundError(from.sqlite_path + " does not exist"), "export");
  }
  auto rows = store::ExportTables(from, out);
  if (!rows.ok()) return Fail(err, rows.status(), "export");
  out.flush();
  err << "contextd export: " << *rows << " rows\n";
  return 0;
}

int RunImportCommand(const server::ServerConfig& config, std::istream& in, std::ostream& err) {
  auto rows = store::ImportTables(TransferOptions(config, /*create=*/true), in);
  if (!rows.ok()) return Fail(err, rows.status(), "import");
  err << "contextd import: " << *rows << " rows\n";
  return 0;
}

}  // namespace contextd::cli
