// contextd's command line: `serve`, `tokens`, `scrub`, `archive keygen|list|reveal`, `trail`,
// `connect`, `status`, `usage`. Parses flags with CLI11
// and hands over to the server and room entry points; prints errors on stderr, never on stdout
// (stdio mode owns stdout).
#include "cli/contextd_main.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/connect_cli.h"
#include "cli/memory_cli.h"
#include "cli/scrub_cli.h"
#include "cli/status_cli.h"
#include "cli/store_cli.h"
#include "cli/tokens_cli.h"
#include "cli/trail_cli.h"
#include "cli/usage_cli.h"
#include "scrub/originals_archive.h"
#include "server/config.h"

extern char** environ;

namespace {

constexpr const char* kVersion = "contextd 0.1.0";

std::string EnvOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

contextd::cli::AgentEnvironment AgentEnvironmentOfProcess() {
  contextd::cli::AgentEnvironment env;
  env.home = EnvOrEmpty("HOME");
  env.claude_config_dir = EnvOrEmpty("CLAUDE_CONFIG_DIR");
  env.codex_home = EnvOrEmpty("CODEX_HOME");
  std::vector<char> cwd(4096);
  if (::getcwd(cwd.data(), cwd.size()) != nullptr) env.cwd = cwd.data();
  return env;
}

std::vector<std::string> EnvironmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    names.push_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

}  // namespace

namespace contextd::cli {

int RunContextd(int argc, char** argv, const server::RegisterFixtures& fixtures) {
  CLI::App app{"contextd: context folding for LLM agents (MCP server and gateway)", "contextd"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);

  // serve
  CLI::App* serve = app.add_subcommand("serve", "Serve MCP over stdio or Streamable HTTP");
  std::string transport, listen, config_file, data_dir, log_level, auth_token_file;
  std::vector<std::string> sets;
  bool conformance = false;
  serve->add_option("--transport", transport, "stdio or http (default http)")
      ->check(CLI::IsMember({"stdio", "http"}));
  serve->add_option("--listen", listen,
                    "ADDR:PORT for http (default 127.0.0.1:9090; port 0 picks one)");
  serve->add_option("--config", config_file, "YAML config file");
  serve->add_option("--data-dir", data_dir, "where the SQLite file lives (default: XDG data dir)");
  serve->add_option("--log-level", log_level, "trace, debug, info, warn, error or off");
  serve->add_option(
      "--auth-token-file", auth_token_file,
      "require a bearer token over HTTP: one token per line, optional 'tenant:' prefix");
  serve->add_option("--set", sets, "override a config key: section.key=value (repeatable)");
  if (fixtures) {
    serve->add_flag("--conformance-fixtures", conformance,
                    "register the test tools, resources and prompts of the MCP conformance suite");
  }

  // migrate
  CLI::App* migrate = app.add_subcommand(
      "migrate",
      "Bring the store's schema (SQLite file or store.postgres.url) up to this binary's");
  migrate->add_option("--config", config_file, "YAML config file (its store: section)");
  migrate->add_option("--data-dir", data_dir,
                      "where the SQLite file lives (default: XDG data dir)");
  migrate->add_option("--set", sets,
                      "override a config key: section.key=value (repeatable), e.g. "
                      "store.backend=postgres");
  // export / import: the store's state as JSON Lines (moves between SQLite and PostgreSQL)
  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "Write the configured store's state (SQLite or PostgreSQL) to stdout as JSON Lines");
  CLI::App* import_cmd = app.add_subcommand(
      "import", "Read an export from stdin into the configured store (which must be empty)");
  for (CLI::App* c : {export_cmd, import_cmd}) {
    c->add_option("--config", config_file, "YAML config file (its store: section)");
    c->add_option("--data-dir", data_dir, "where the SQLite file lives (default: XDG data dir)");
    c->add_option("--set", sets, "override a config key: section.key=value (repeatable)");
  }

  // tokens
  CLI::App* tokens = app.add_subcommand("tokens", "Count (or list) the tokens of stdin");
  std::string encoding = "o200k_base";
  bool ids = false, allow_special = false;
  tokens->add_option("--encoding", encoding, "o200k_base or cl100k_base")
      ->check(CLI::IsMember({"o200k_base", "cl100k_base"}));
  tokens->add_flag("--ids", ids, "print the token ids instead of the count");
  tokens->add_flag("--allow-special", allow_special,
                   "recognise special tokens such as <|endoftext|>");

  // scrub
  CLI::App* scrub = app.add_subcommand("scrub", "Redact secrets from stdin to stdout");
  std::string rules_file, report;
  bool with_defaults = false;
  auto* rules_opt =
      scrub->add_option("--rules", rules_file, contextd::cli::kRulesFlagHelp)->type_name("FILE");
  scrub->add_flag("--with-defaults", with_defaults, contextd::cli::kWithDefaultsFlagHelp)
      ->needs(rules_opt);
  scrub->add_option("--report", report, "json: print the findings instead of the redacted text")
      ->check(CLI::IsMember({"json"}));

  // archive
  CLI::App* archive = app.add_subcommand(
      "archive", "Encrypted originals of redacted secrets (scrub.archive_originals)");
  archive->require_subcommand(1);
  std::string archive_dir, key_file, archive_id;
  CLI::App* keygen = archive->add_subcommand("keygen", "Create a new key file (mode 0600)");
  keygen->add_option("--key-file", key_file, "where to write the key")->required();
  CLI::App* list = archive->add_subcommand("list", "List the ids of archived originals");
  CLI::App* reveal = archive->add_subcommand("reveal", "Decrypt one archived original to stdout");
  for (CLI::App* sub : {list, reveal}) {
    sub->add_option("--data-dir", archive_dir, "the server's data dir (default: XDG data dir)");
  }
  reveal->add_option("--key-file", key_file, "the key file (mode 0600)")->required();
  reveal->add_option("id", archive_id, "archive id (see `contextd archive list`)")->required();

  // trail
  CLI::App* trail = app.add_subcommand(
      "trail",
      "Read the foldable trail from the store: the SQLite file (also after a crash) or "
      "PostgreSQL (store.backend: postgres)");
  trail->require_subcommand(1);
  contextd::cli::TrailCommand trail_command;
  CLI::App* trail_list = trail->add_subcommand("list", "Sessions with their branches");
  CLI::App* trail_show = trail->add_subcommand("show", "A session's folded view");
  CLI::App* trail_unfold = trail->add_subcommand("unfold", "A scope's events in full");
  CLI::App* trail_export = trail->add_subcommand("export", "Every session (or one) as JSON");
  CLI::App* trail_prune = trail->add_subcommand(
      "prune", "Delete what the retention: settings no longer keep (one sweep now)");
  trail_prune->add_flag("--dry-run", trail_command.dry_run, "print what would go, delete nothing");
  trail_prune->add_option(
      "--older-than", trail_command.older_than,
      "sessions idle this long go (30m, 24h, 7d; default retention.trail_days)");
  trail_prune->add_flag("--vacuum", trail_command.vacuum,
                        "SQLite: switch a file made before incremental vacuum (one VACUUM; stop "
                        "the server first)");
  for (CLI::App* sub : {trail_list, trail_show, trail_unfold, trail_export, trail_prune}) {
    sub->add_option("--data-dir", trail_command.data_dir,
                    "the server's data dir (default: XDG data dir)");
    sub->add_option("--config", config_file, "YAML config file (its store: section)");
    sub->add_option("--set", sets, "override a config key: section.key=value (repeatable)");
  }
  trail_show->add_option("id", trail_command.id, "session scope id (ses_...)")->required();
  trail_show->add_option("--depth", trail_command.depth,
                         "show branches at depth 0 to this depth open (default: all)");
  trail_unfold->add_option("id", trail_command.id, "scope id (br_... or ses_...)")->required();
  trail_unfold->add_option("--offset", trail_command.offset, "skip this many events");
  trail_unfold->add_option("--limit", trail_command.limit, "events to show (default 20)");
  trail_export->add_option("id", trail_command.id, "only this session scope id");

  // memory
  CLI::App* mem = app.add_subcommand(
      "memory",
      "Read and manage the ReasoningBank in the store (SQLite file or PostgreSQL; JSONL "
      "export/import)");
  mem->require_subcommand(1);
  contextd::cli::MemoryCommand memory_command;
  CLI::App* mem_list = mem->add_subcommand("list", "Memories of a tenant and project");
  CLI::App* mem_show = mem->add_subcommand(
      "show", "One memory, its history, and where it was injected with what followed");
  CLI::App* mem_search = mem->add_subcommand("search", "Search as memory_search does");
  CLI::App* mem_export = mem->add_subcommand("export", "Memories as JSON Lines on stdout");
  CLI::App* mem_import =
      mem->add_subcommand("import", "Add memories from JSON Lines (ids kept, texts scrubbed)");
  CLI::App* mem_retire = mem->add_subcommand("retire", "Retire a memory (kept with its history)");
  for (CLI::App* sub : {mem_list, mem_show, mem_search, mem_export, mem_import, mem_retire}) {
    sub->add_option("--data-dir", memory_command.data_dir,
                    "the server's data dir (default: XDG data dir)");
    sub->add_option("--config", config_file, "YAML config file (its store: and memory: sections)");
    sub->add_option("--set", sets, "override a config key: section.key=value (repeatable)");
  }
  for (CLI::App* sub : {mem_list, mem_search, mem_export}) {
    sub->add_option("--tenant", memory_command.tenant, "tenant (default: local)");
    sub->add_option("--project", memory_command.project, "project (default: default)");
  }
  for (CLI::App* sub : {mem_list, mem_export}) {
    sub->add_option("--status", memory_command.status, "only pending, active or retired")
        ->check(CLI::IsMember({"pending", "active", "retired"}));
    sub->add_flag("--all", memory_command.all_tenants, "every tenant and project");
  }
  for (CLI::App* sub : {mem_list, mem_search}) {
    sub->add_option("--limit", memory_command.limit, "at most this many (default 50)");
  }
  mem_show->add_option("id", memory_command.arg, "memory id (mem_...)")->required();
  mem_show->add_flag("--json", memory_command.json, "print one JSON object");
  mem_retire->add_option("id", memory_command.arg, "memory id (mem_...)")->required();
  mem_retire->add_option("--reason", memory_command.reason, "why (kept in its history)");
  mem_search->add_option("query", memory_command.arg, "what to look for")->required();
  mem_import->add_option("file", memory_command.arg, "JSONL file, or - for stdin")->required();
  mem_import->add_option("--rules", memory_command.rules_file,
                         "scrub with this gitleaks TOML on top of the built-in rules");

  // connect
  CLI::App* connect = app.add_subcommand(
      "connect", "Point an agent at contextd (MCP server and model endpoint); reversible");
  contextd::cli::ConnectCommand connect_command;
  connect->add_option("client", connect_command.client, "the agent to configure")
      ->required()
      ->check(CLI::IsMember({"claude-code", "codex"}));
  auto* project_opt = connect->add_option(
      "--project", connect_command.project_dir,
      "claude-code project scope: DIR/.mcp.json and DIR/.claude/settings.json (default: current "
      "directory); codex has only $CODEX_HOME/config.toml");
  connect
      ->add_flag("--user", connect_command.user,
                 "user scope: ~/.claude.json and ~/.claude/settings.json ($CLAUDE_CONFIG_DIR)")
      ->excludes(project_opt);
  connect->add_flag("--dry-run", connect_command.dry_run, "print what would change; write nothing");
  connect->add_flag("--undo", connect_command.undo, "restore what connect replaced");
  connect->add_option("--url", connect_command.url,
                      "contextd's base URL (default http://127.0.0.1:9090)");
  connect->add_option("--data-dir", connect_command.data_dir,
                      "where the record of previous values lives (default: XDG data dir)");

  // status
  CLI::App* status = app.add_subcommand(
      "status", "Is agent traffic arriving? Server health, MCP/model requests, Claude Code config");
  contextd::cli::StatusCommand status_command;
  status->add_option("--url", status_command.url,
                     "contextd's base URL (default http://127.0.0.1:9090)");
  status->add_option("--token-file", status_command.token_file,
                     "bearer token for /metrics (the server's --auth-token-file)");
  status
      ->add_option("--conversations", status_command.conversations,
                   "model conversations listed with their folds (default 10; 0: none)")
      ->check(CLI::Range(0, 200));

  // usage
  CLI::App* usage = app.add_subcommand(
      "usage", "Model gateway usage per tenant and project, from the store (SQLite or PostgreSQL)");
  contextd::cli::UsageCommand usage_command;
  usage->add_option("--data-dir", usage_command.data_dir, "default: the XDG data dir");
  usage->add_option("--config", config_file, "YAML config file (its store: section)");
  usage->add_option("--set", sets, "override a config key: section.key=value (repeatable)");
  usage->add_option("--tenant", usage_command.tenant, "only this tenant");
  usage->add_option("--since", usage_command.since,
                    "only requests since: 30m, 24h, 7d, a date (2025-06-01, UTC) or unix seconds");
  usage->add_flag("--json", usage_command.json, "print JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, std::cerr, std::cerr);
  }

  if (*tokens) {
    return contextd::cli::RunTokensCommand(encoding, ids, allow_special, std::cin, std::cout,
                                           std::cerr);
  }
  if (*scrub) {
    return contextd::cli::RunScrubCommand(rules_file, with_defaults, report == "json", std::cin,
                                          std::cout, std::cerr);
  }

  if (*connect) {
    return contextd::cli::RunConnectCommand(connect_command, AgentEnvironmentOfProcess(), std::cout,
                                            std::cerr);
  }
  if (*status) {
    return contextd::cli::RunStatusCommand(status_command, AgentEnvironmentOfProcess(), std::cout,
                                           std::cerr);
  }

  auto fail = [](const absl::Status& s) {
    std::cerr << "contextd: " << s.message() << "\n";
    return 2;
  };
  if (*archive) {
    if (*keygen) {
      if (auto s = contextd::scrub::CreateArchiveKeyFile(key_file); !s.ok()) return fail(s);
      std::cerr << "wrote a new key to " << key_file << " (mode 0600)\n";
      return 0;
    }
    contextd::server::ServerConfig dirs;
    dirs.data_dir = archive_dir;
    auto store = contextd::scrub::FileOriginalsArchive::Open(
        contextd::server::ResolveDataDir(dirs) + "/originals");
    if (!store.ok()) return fail(store.status());
    if (*list) {
      auto archived = (*store)->List();
      if (!archived.ok()) return fail(archived.status());
      for (const std::string& id : *archived) std::cout << id << "\n";
      return 0;
    }
    auto original = contextd::scrub::RevealOriginal(**store, key_file, archive_id);
    if (!original.ok()) return fail(original.status());
    std::cout << *original;
    return 0;
  }

  contextd::server::ServerConfig config;
  if (!config_file.empty()) {
    if (auto s = contextd::server::LoadConfigFile(config_file, &config); !s.ok()) return fail(s);
  }
  if (auto s = contextd::server::ApplyEnvironment([](const char* n) { return std::getenv(n); },
                                                  EnvironmentNames(), &config);
      !s.ok()) {
    return fail(s);
  }
  for (const std::string& kv : sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("--set expects section.key=value, got '", kv, "'")));
    }
    if (auto s = contextd::server::SetConfigValue(kv.substr(0, eq), kv.substr(eq + 1), &config);
        !s.ok()) {
      return fail(s);
    }
  }
  if (!transport.empty()) config.transport = transport;
  if (!listen.empty()) config.listen = listen;
  if (!data_dir.empty()) config.data_dir = data_dir;
  if (!log_level.empty()) config.log_level = log_level;
  if (!auth_token_file.empty()) config.auth_token_file = auth_token_file;
  if (conformance) config.conformance_fixtures = true;
  if (auto s = contextd::server::ValidateConfig(config); !s.ok()) return fail(s);
  if (*migrate) return contextd::cli::RunMigrateCommand(config, std::cout, std::cerr);
  if (*usage) {
    usage_command.store = config.store;
    usage_command.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    return contextd::cli::RunUsageCommand(usage_command, std::cout, std::cerr);
  }
  if (*mem) {
    memory_command.store = config.store;
    memory_command.org_across_tenants = config.memory.org_across_tenants;
    memory_command.command = mem->get_subcommands().front()->get_name();
    return contextd::cli::RunMemoryCommand(memory_command, std::cin, std::cout, std::cerr);
  }
  if (*trail) {
    trail_command.store = config.store;
    trail_command.retention = config.retention;
    trail_command.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    trail_command.command = trail->get_subcommands().front()->get_name();
    return contextd::cli::RunTrailCommand(trail_command, std::cout, std::cerr);
  }
  if (*export_cmd) return contextd::cli::RunExportCommand(config, std::cout, std::cerr);
  if (*import_cmd) return contextd::cli::RunImportCommand(config, std::cin, std::cerr);

  absl::Status result = contextd::server::RunServer(config, fixtures);
  if (!result.ok()) return fail(result);
  return 0;
}

}  // namespace contextd::cli
