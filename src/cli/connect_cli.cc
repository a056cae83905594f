#include "cli/connect_cli.h"

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/connect_codex.h"
#include "cli/internal/connect_edit.h"
#include "cli/internal/header_lines.h"
#include "nlohmann/json.hpp"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using internal::OJson;

constexpr char kServerName[] = "contextd";
constexpr char kMcpServers[] = "mcpServers";
constexpr char kEnv[] = "env";
constexpr char kBaseUrlVar[] = "ANTHROPIC_BASE_URL";
constexpr char kHeadersVar[] = "ANTHROPIC_CUSTOM_HEADERS";

absl::StatusOr<std::unique_ptr<internal::ConfigDocument>> ParseJson(const internal::TextFile& f) {
  ASSIGN_OR_RETURN(std::unique_ptr<internal::JsonDocument> doc, internal::JsonDocument::Parse(f));
  return std::unique_ptr<internal::ConfigDocument>(std::move(doc));
}

// Reads `path` as a JSON object (missing or blank: empty).
absl::StatusOr<OJson> ReadJsonObject(const std::string& path) {
  ASSIGN_OR_RETURN(internal::TextFile f, internal::ReadTextFile(path, 0644));
  ASSIGN_OR_RETURN(std::unique_ptr<internal::JsonDocument> doc, internal::JsonDocument::Parse(f));
  return doc->doc();
}

std::string AbsolutePath(const std::string& dir, const std::string& cwd) {
  fs::path p(dir.empty() ? cwd : dir);
  if (p.is_relative()) p = fs::path(cwd) / p;
  return p.lexically_normal().string();
}

internal::ConnectTarget ClaudeTarget(const ConnectCommand& c, ClaudeCodeScope scope,
                                     const std::string& project) {
  internal::ConnectTarget t;
  t.client = "claude-code";
  t.display_name = "Claude Code";
  t.where = scope == ClaudeCodeScope::kUser ? "user scope" : base::StrCat("project ", project);
  t.data_dir = c.data_dir;
  t.dry_run = c.dry_run;
  t.undo_command = base::StrCat("contextd connect claude-code",
                                scope == ClaudeCodeScope::kUser ? " --user"
                                : c.project_dir.empty()         ? ""
                                                                : " --project " + project,
                                c.data_dir.empty() ? "" : " --data-dir " + c.data_dir, " --undo");
  t.parse = ParseJson;
  return t;
}

// Whether `path` survives as an ANTHROPIC_CUSTOM_HEADERS value: Claude Code splits the block at
// line breaks and trims each value, and the server refuses control characters.
bool HeaderSafe(std::string_view path) {
  for (char ch : path) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return false;
  }
  return !path.empty() && path.back() != ' ';
}

// The string env.<var> of a settings file, when it has one (unreadable files count as none).
std::optional<std::string> EnvString(const std::string& settings_path, const char* var) {
  auto settings = ReadJsonObject(settings_path);
  if (!settings.ok() || !settings->contains(kEnv) || !(*settings)[kEnv].is_object()) {
    return std::nullopt;
  }
  const OJson& env = (*settings)[kEnv];
  if (!env.contains(var) || !env[var].is_string()) return std::nullopt;
  return env[var].get<std::string>();
}

// Claude Code merges the settings files' env key by key, settings.local.json over settings.json
// over the user's: warn where another file decides a variable connect wrote.
void WarnAboutOverrides(const std::string& project, const ClaudeCodeFiles& files,
                        const std::string& url, const AgentEnvironment& env, std::ostream& out) {
  std::string local_path = (fs::path(project) / ".claude" / "settings.local.json").string();
  if (auto local = EnvString(local_path, kBaseUrlVar); local && *local != url) {
    out << "warning: " << local_path << " sets " << kBaseUrlVar << " = "
        << base::DumpJson(OJson(*local)) << ", which overrides " << files.settings_file << "\n";
  }
  if (auto local = EnvString(local_path, kHeadersVar);
      local && internal::HeaderLineValue(*local, kProjectHeader) != project) {
    out << "warning: " << local_path << " sets " << kHeadersVar << ", which overrides "
        << files.settings_file << "'s; add the line `" << kProjectHeader << ": " << project
        << "` to it\n";
  }
  auto user = ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env);
  if (!user.ok() || user->settings_file == files.settings_file) return;
  if (auto mine = EnvString(user->settings_file, kHeadersVar);
      mine && internal::RemoveHeaderLine(*mine, kProjectHeader).find(':') != std::string::npos) {
    out << "warning: " << user->settings_file << " sets " << kHeadersVar << "; in this project "
        << files.settings_file << "'s value replaces it: copy the lines this project needs into "
        << "it\n";
  }
}

absl::Status Connect(const ConnectCommand& c, ClaudeCodeScope scope, const std::string& project,
                     const ClaudeCodeFiles& files, const AgentEnvironment& env, std::ostream& out) {
  ASSIGN_OR_RETURN(std::string url, internal::NormalizeContextdUrl(c.url));
  // ~/.claude.json holds Claude Code's private state: created private, as Claude Code does.
  mode_t mcp_mode = scope == ClaudeCodeScope::kUser ? 0600 : 0644;
  std::vector<internal::ConfigEdit> edits = {
      {files.mcp_file, kMcpServers, kServerName, OJson{{"type", "http"}, {"url", url + "/mcp"}},
       mcp_mode},
      {files.settings_file, kEnv, kBaseUrlVar, OJson(url), 0644},
  };
  const bool name_project = scope == ClaudeCodeScope::kProject && HeaderSafe(project);
  if (name_project) {
    // The model requests' project: the directory, which ProjectFromHeader hashes as
    // ProjectFromRoots hashes the MCP session's root (Claude Code's working directory).
    edits.push_back({files.settings_file, kEnv, kHeadersVar, OJson(project), 0644, kProjectHeader});
  } else if (scope == ClaudeCodeScope::kProject) {
    out << "warning: " << project << " cannot be a header value (control characters or blanks "
        << "at an end): " << kProjectHeader << " not written\n";
  }
  RETURN_IF_ERROR(internal::ApplyConnect(ClaudeTarget(c, scope, project), url, edits, out));
  if (c.dry_run) return absl::OkStatus();
  if (name_project) {
    WarnAboutOverrides(project, files, url, env, out);
  } else if (scope == ClaudeCodeScope::kUser) {
    out << "note: no " << kProjectHeader << " at user scope (one value would put every "
        << "repository's model requests in one project): they count in project `default` unless "
        << "a repository runs `contextd connect claude-code` (project scope)\n";
  }
  out << "next: start contextd: contextd serve; then run claude"
      << (scope == ClaudeCodeScope::kProject ? base::StrCat(" in ", project) : "") << "\n";
  if (scope == ClaudeCodeScope::kProject) {
    out << "(Claude Code asks once to approve the project MCP server `contextd` from .mcp.json; "
           "`claude -p` uses it without asking)\n";
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClaudeCodeFiles> ResolveClaudeCodeFiles(ClaudeCodeScope scope,
                                                       const std::string& project_dir,
                                                       const AgentEnvironment& env) {
  ClaudeCodeFiles files;
  if (scope == ClaudeCodeScope::kProject) {
    fs::path dir = AbsolutePath(project_dir, env.cwd);
    files.mcp_file = (dir / ".mcp.json").string();
    files.settings_file = (dir / ".claude" / "settings.json").string();
    return files;
  }
  if (env.claude_config_dir.empty() && env.home.empty()) {
    return absl::InvalidArgumentError("HOME is not set: cannot find Claude Code's user files");
  }
  // Claude Code: the global config is $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json; the
  // config dir (user settings.json) is $CLAUDE_CONFIG_DIR, else ~/.claude.
  fs::path config_dir = env.claude_config_dir.empty() ? fs::path(env.home) / ".claude"
                                                      : fs::path(env.claude_config_dir);
  fs::path global =
      (env.claude_config_dir.empty() ? fs::path(env.home) : fs::path(env.claude_config_dir)) /
      ".claude.json";
  fs::path legacy = config_dir / ".config.json";
  std::error_code ec;
  // As Claude Code: when only the legacy <config dir>/.config.json exists (non-empty), it is the
  // global config.
  if (!fs::exists(global, ec) && fs::is_regular_file(legacy, ec) && fs::file_size(legacy, ec) > 0) {
    global = legacy;
  }
  files.mcp_file = AbsolutePath(global.string(), env.cwd);
  files.settings_file = AbsolutePath((config_dir / "settings.json").string(), env.cwd);
  return files;
}

absl::StatusOr<ClaudeCodeConnection> ReadClaudeCodeConnection(ClaudeCodeScope scope,
                                                              const std::string& project_dir,
                                                              const AgentEnvironment& env) {
  ClaudeCodeConnection c;
  ASSIGN_OR_RETURN(c.files, ResolveClaudeCodeFiles(scope, project_dir, env));
  ASSIGN_OR_RETURN(OJson mcp, ReadJsonObject(c.files.mcp_file));
  ASSIGN_OR_RETURN(OJson settings, ReadJsonObject(c.files.settings_file));
  const OJson& servers = mcp.value(kMcpServers, OJson::object());
  if (servers.is_object() && servers.contains(kServerName) && servers[kServerName].is_object() &&
      servers[kServerName].contains("url") && servers[kServerName]["url"].is_string()) {
    c.mcp_url = servers[kServerName]["url"].get<std::string>();
  }
  const OJson& envs = settings.value(kEnv, OJson::object());
  if (envs.is_object() && envs.contains(kBaseUrlVar) && envs[kBaseUrlVar].is_string()) {
    c.base_url = envs[kBaseUrlVar].get<std::string>();
  }
  if (envs.is_object() && envs.contains(kHeadersVar) && envs[kHeadersVar].is_string()) {
    c.project_header =
        internal::HeaderLineValue(envs[kHeadersVar].get_ref<const std::string&>(), kProjectHeader);
  }
  return c;
}

int RunConnectCommand(const ConnectCommand& command, const AgentEnvironment& env, std::ostream& out,
                      std::ostream& err) {
  absl::Status st;
  if (command.client == "codex") {
    st = ConnectCodex(command, env, out);
  } else if (command.client != "claude-code") {
    st = absl::InvalidArgumentError(
        base::StrCat("unknown client '", command.client, "' (known: claude-code, codex)"));
  } else {
    ClaudeCodeScope scope = command.user ? ClaudeCodeScope::kUser : ClaudeCodeScope::kProject;
    std::string project = AbsolutePath(command.project_dir, env.cwd);
    std::error_code ec;
    if (scope == ClaudeCodeScope::kProject && !fs::is_directory(project, ec)) {
      st = absl::NotFoundError(base::StrCat("project directory ", project, " does not exist"));
    }
    auto files = ResolveClaudeCodeFiles(scope, project, env);
    if (!st.ok()) {
      // reported below
    } else if (!files.ok()) {
      st = files.status();
    } else if (command.undo) {
      st = internal::ApplyUndo(ClaudeTarget(command, scope, project),
                               {files->mcp_file, files->settings_file}, out);
    } else {
      st = Connect(command, scope, project, *files, env, out);
    }
  }
  if (!st.ok()) {
    err << "contextd connect " << command.client << ": " << st.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace contextd::cli
