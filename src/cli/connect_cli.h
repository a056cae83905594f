// `contextd connect claude-code`: points Claude Code at contextd in one command, by editing the
// files Claude Code reads (verified against the pinned 2.1.332, see docs/connect-claude-code.md):
// the MCP server entry `contextd` (.mcp.json or ~/.claude.json), env.ANTHROPIC_BASE_URL
// (.claude/settings.json or ~/.claude/settings.json) and, at project scope, the line
// `X-Contextd-Project: <dir>` of env.ANTHROPIC_CUSTOM_HEADERS. Every other key and header line is
// kept; the previous values are saved so that --undo restores them. Single-threaded; a CLI
// helper, not for use inside the server.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace contextd::cli {

enum class ClaudeCodeScope { kProject, kUser };

// The header naming the project of Claude Code's model requests (tools::ProjectFromHeader).
inline constexpr char kProjectHeader[] = "X-Contextd-Project";

// The parts of the process environment that decide where the agents' files are.
struct AgentEnvironment {
  std::string home;               // $HOME
  std::string claude_config_dir;  // $CLAUDE_CONFIG_DIR; empty when unset
  std::string codex_home;         // $CODEX_HOME; empty when unset
  std::string cwd;                // the current directory (default project)
};

// The two files `connect` edits for one scope.
struct ClaudeCodeFiles {
  // Project: DIR/.mcp.json. User: $CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json (or the
  // legacy <config dir>/.config.json when only that one exists, as Claude Code does).
  std::string mcp_file;
  // Project: DIR/.claude/settings.json. User: $CLAUDE_CONFIG_DIR/settings.json or
  // ~/.claude/settings.json.
  std::string settings_file;
};

// Where Claude Code reads the MCP servers and settings of `scope`. `project_dir` (project scope
// only; empty: env.cwd) is made absolute. Returns InvalidArgument when HOME is needed but empty.
absl::StatusOr<ClaudeCodeFiles> ResolveClaudeCodeFiles(ClaudeCodeScope scope,
                                                       const std::string& project_dir,
                                                       const AgentEnvironment& env);

// What Claude Code's files of one scope say about contextd (for `contextd status`).
struct ClaudeCodeConnection {
  ClaudeCodeFiles files;
  std::optional<std::string> mcp_url;   // mcpServers.contextd.url, when there is one
  std::optional<std::string> base_url;  // env.ANTHROPIC_BASE_URL, when set
  // The X-Contextd-Project line's value in env.ANTHROPIC_CUSTOM_HEADERS, when there is one.
  std::optional<std::string> project_header;
};

// Reads the files of `scope` (a missing file counts as empty). Returns InvalidArgument naming the
// file when one is not a JSON object.
absl::StatusOr<ClaudeCodeConnection> ReadClaudeCodeConnection(ClaudeCodeScope scope,
                                                              const std::string& project_dir,
                                                              const AgentEnvironment& env);

struct ConnectCommand {
  std::string client = "claude-code";         // "claude-code" or "codex" (connect_codex.h)
  std::string project_dir;                    // project scope: DIR (empty: the current directory)
  bool user = false;                          // user scope instead of project
  bool dry_run = false;                       // print what would change, write nothing
  bool undo = false;                          // restore what the previous connects replaced
  std::string url = "http://127.0.0.1:9090";  // contextd's base URL (no /mcp)
  // Where the record of previous values lives: <data_dir>/connect/<client>.json (empty: the
  // default data dir, as `contextd serve`).
  std::string data_dir;
};

// Runs `command`: reports every change (or, with dry_run, every change it would make) and the
// next step on `out`, errors on `err`. Nothing is written unless every file involved parses.
// Returns the exit code: 0 on success (also when there was nothing to do), 2 on error.
int RunConnectCommand(const ConnectCommand& command, const AgentEnvironment& env, std::ostream& out,
                      std::ostream& err);

}  // namespace contextd::cli
