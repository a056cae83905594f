#include "cli/connect_codex.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/internal/connect_edit.h"
#include "cli/internal/toml_document.h"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using internal::OJson;
using internal::TomlString;

constexpr char kName[] = "contextd";
constexpr char kMcpServers[] = "mcp_servers";
constexpr char kModelProviders[] = "model_providers";
constexpr char kModelProvider[] = "model_provider";

absl::StatusOr<std::unique_ptr<internal::ConfigDocument>> ParseToml(const internal::TextFile& f) {
  ASSIGN_OR_RETURN(std::unique_ptr<internal::TomlDocument> doc, internal::TomlDocument::Parse(f));
  return std::unique_ptr<internal::ConfigDocument>(std::move(doc));
}

}  // namespace

absl::StatusOr<std::string> ResolveCodexConfigFile(const AgentEnvironment& env) {
  fs::path dir;
  if (!env.codex_home.empty()) {
    dir = env.codex_home;
  } else if (!env.home.empty()) {
    dir = fs::path(env.home) / ".codex";
  } else {
    return absl::InvalidArgumentError("HOME is not set: cannot find Codex's config.toml");
  }
  if (dir.is_relative()) dir = fs::path(env.cwd) / dir;
  return (dir / "config.toml").lexically_normal().string();
}

absl::StatusOr<CodexConnection> ReadCodexConnection(const AgentEnvironment& env) {
  CodexConnection c;
  ASSIGN_OR_RETURN(c.config_file, ResolveCodexConfigFile(env));
  ASSIGN_OR_RETURN(internal::TextFile file, internal::ReadTextFile(c.config_file, 0600));
  ASSIGN_OR_RETURN(std::unique_ptr<internal::TomlDocument> doc,
                   internal::TomlDocument::Parse(file));
  c.mcp_url = doc->GetString({kMcpServers, kName, "url"});
  c.model_provider = doc->GetString({kModelProvider});
  c.base_url = doc->GetString({kModelProviders, kName, "base_url"});
  return c;
}

absl::Status ConnectCodex(const ConnectCommand& command, const AgentEnvironment& env,
                          std::ostream& out) {
  if (!command.project_dir.empty()) {
    return absl::InvalidArgumentError(
        "--project does not apply to codex: Codex takes model_provider only from the user's "
        "config ($CODEX_HOME/config.toml)");
  }
  ASSIGN_OR_RETURN(std::string file, ResolveCodexConfigFile(env));
  internal::ConnectTarget target;
  target.client = "codex";
  target.display_name = "Codex";
  target.where = file;
  target.data_dir = command.data_dir;
  target.dry_run = command.dry_run;
  target.undo_command =
      base::StrCat("contextd connect codex",
                   command.data_dir.empty() ? "" : " --data-dir " + command.data_dir, " --undo");
  target.parse = ParseToml;
  if (command.undo) return internal::ApplyUndo(target, {file}, out);

  ASSIGN_OR_RETURN(std::string url, internal::NormalizeContextdUrl(command.url));
  // Codex keeps secrets in CODEX_HOME (auth.json): a config it creates is private too.
  std::vector<internal::ConfigEdit> edits = {
      {file, "", kModelProvider,
       OJson(base::StrCat(kModelProvider, " = ", TomlString(kName), "\n")), 0600},
      {file, kMcpServers, kName,
       OJson(
           base::StrCat("[", kMcpServers, ".", kName, "]\nurl = ", TomlString(url + "/mcp"), "\n")),
       0600},
      {file, kModelProviders, kName,
       OJson(base::StrCat("[", kModelProviders, ".", kName, "]\nname = ", TomlString(kName),
                          "\nbase_url = ", TomlString(url + "/v1"),
                          "\nwire_api = \"responses\"\nenv_key = ", TomlString(kCodexKeyEnv),
                          "\n")),
       0600},
  };
  RETURN_IF_ERROR(internal::ApplyConnect(target, url, edits, out));
  if (command.dry_run) return absl::OkStatus();
  out << "next: start contextd (contextd serve) with model_gateway.openai.base_url set to your "
         "provider; export "
      << kCodexKeyEnv << " (contextd passes it on); then run codex\n";
  return absl::OkStatus();
}

}  // namespace contextd::cli
