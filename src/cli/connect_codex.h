// `contextd connect codex`: points the Codex CLI at contextd by editing the file it reads
// ($CODEX_HOME/config.toml, default ~/.codex/config.toml; see docs/connect-codex.md): the MCP
// server [mcp_servers.contextd], the model provider [model_providers.contextd] (contextd's /v1,
// Responses API) and the top-level model_provider. The file is edited as text: every other key,
// table and comment stays as it was; replaced values are saved so that --undo restores them.
// Single-threaded; a CLI helper, not for use inside the server.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/connect_cli.h"

namespace contextd::cli {

// The environment variable Codex reads contextd's key from (contextd passes it upstream).
inline constexpr char kCodexKeyEnv[] = "OPENAI_API_KEY";

// $CODEX_HOME/config.toml, else $HOME/.codex/config.toml, made absolute. InvalidArgument when
// neither CODEX_HOME nor HOME is set.
absl::StatusOr<std::string> ResolveCodexConfigFile(const AgentEnvironment& env);

// What Codex's config.toml says about contextd (for `contextd status`).
struct CodexConnection {
  std::string config_file;
  std::optional<std::string> mcp_url;         // mcp_servers.contextd.url
  std::optional<std::string> model_provider;  // the top-level model_provider
  std::optional<std::string> base_url;        // model_providers.contextd.base_url
};

// Reads the config file (a missing file counts as empty). InvalidArgument naming the file when it
// is not valid TOML.
absl::StatusOr<CodexConnection> ReadCodexConnection(const AgentEnvironment& env);

// Runs `contextd connect codex` (command.undo: --undo; command.dry_run: --dry-run), reporting on
// `out`. InvalidArgument for a bad --url, --project (Codex reads model_provider only from the
// user's config) or a config file that is not valid TOML or defines the entries in a form connect
// does not edit; FailedPrecondition when a file cannot be read or written. Nothing is written
// unless the edited file parses.
absl::Status ConnectCodex(const ConnectCommand& command, const AgentEnvironment& env,
                          std::ostream& out);

}  // namespace contextd::cli
