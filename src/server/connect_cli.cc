#include "server/connect_cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "base/status_macros.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/config.h"

namespace contextd::server {
namespace {

namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;

constexpr char kServerName[] = "contextd";
constexpr char kMcpServers[] = "mcpServers";
constexpr char kEnv[] = "env";
constexpr char kBaseUrlVar[] = "ANTHROPIC_BASE_URL";

// One JSON file as read: its document (an object), whether it existed, and its mode.
struct JsonFile {
  std::string path;  // as named to the user
  std::string real;  // where to write: the symlink's target when `path` is one
  OJson doc = OJson::object();
  bool existed = false;
  mode_t mode = 0644;
};

std::string ErrnoText() { return std::strerror(errno); }

// Reads `path` as a JSON object. A missing file (or an empty one) is an empty object. Returns
// InvalidArgument naming the file when it is not valid JSON or not an object.
absl::StatusOr<JsonFile> ReadJsonFile(const std::string& path, mode_t new_mode) {
  JsonFile f;
  f.path = path;
  f.real = path;
  f.mode = new_mode;
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    fs::path target = fs::weakly_canonical(path, ec);
    if (ec) return absl::FailedPreconditionError(base::StrCat(path, ": ", ec.message()));
    f.real = target.string();
  }
  struct stat st {};
  if (::stat(f.real.c_str(), &st) != 0) {
    if (errno == ENOENT) return f;
    return absl::FailedPreconditionError(base::StrCat("cannot read ", path, ": ", ErrnoText()));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(base::StrCat(path, " is not a regular file"));
  }
  f.existed = true;
  f.mode = st.st_mode & 07777;
  std::ifstream in(f.real, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(base::StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return f;
  try {
    f.doc = OJson::parse(text);
  } catch (const OJson::exception& e) {
    return absl::InvalidArgumentError(
        base::StrCat(path, " is not valid JSON (", e.what(), "); nothing was changed"));
  }
  if (!f.doc.is_object()) {
    return absl::InvalidArgumentError(
        base::StrCat(path, " is not a JSON object; nothing was changed"));
  }
  return f;
}

// Writes `doc` (2-space indent, trailing newline) to f.real through a temp file in the same
// directory and a rename, with f.mode. Creates missing parent directories.
absl::Status WriteJsonFile(const JsonFile& f, const OJson& doc) {
  fs::path real(f.real);
  std::error_code ec;
  if (real.has_parent_path()) fs::create_directories(real.parent_path(), ec);
  if (ec)
    return absl::FailedPreconditionError(
        base::StrCat("cannot create ", real.parent_path().string(), ": ", ec.message()));
  std::string text = doc.dump(2) + "\n";
  std::string tmp = (real.parent_path() / ("." + real.filename().string() + ".contextd-" +
                                           std::to_string(::getpid()) + ".tmp"))
                        .string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, f.mode);
  if (fd < 0)
    return absl::FailedPreconditionError(base::StrCat("cannot write ", tmp, ": ", ErrnoText()));
  bool ok = true;
  size_t off = 0;
  while (ok && off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      ok = false;
    else
      off += static_cast<size_t>(n);
  }
  // open() applied the umask; an existing file keeps exactly its mode.
  if (ok && f.existed) ok = ::fchmod(fd, f.mode) == 0;
  if (ok) ok = ::fsync(fd) == 0;
  std::string why = ok ? "" : ErrnoText();
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = ErrnoText();
  }
  if (ok && ::rename(tmp.c_str(), f.real.c_str()) != 0) {
    ok = false;
    why = ErrnoText();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return absl::FailedPreconditionError(base::StrCat("cannot write ", f.path, ": ", why));
  }
  return absl::OkStatus();
}

// Same JSON value, ignoring the order of object keys.
bool SameJson(const OJson& a, const OJson& b) {
  return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
}

std::string Compact(const OJson& v) {
  return v.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

std::string AbsolutePath(const std::string& dir, const std::string& cwd) {
  fs::path p(dir.empty() ? cwd : dir);
  if (p.is_relative()) p = fs::path(cwd) / p;
  return p.lexically_normal().string();
}

std::string StripTrailingSlash(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// One key that connect sets: doc[parent][key] = value.
struct Edit {
  std::string file;
  std::string parent;
  std::string key;
  OJson value;
};

// The record of previous values: <data_dir>/connect/claude-code.json, shaped
//   {"version": 1, "files": {"<path>": {"created": bool, "keys": [
//     {"parent": "env", "key": "ANTHROPIC_BASE_URL", "parent_created": bool,
//      "previous": <value, absent when there was none>, "written": <value>}]}}}
// "previous" is what was there before the first connect that changed the key; later connects
// keep it and only update "written".
struct Record {
  std::string path;
  JsonFile file;
  OJson doc = OJson{{"version", 1}, {"files", OJson::object()}};
};

absl::StatusOr<Record> LoadRecord(const std::string& data_dir) {
  ServerConfig config;
  config.data_dir = data_dir;
  Record r;
  r.path = ResolveDataDir(config) + "/connect/claude-code.json";
  ASSIGN_OR_RETURN(r.file, ReadJsonFile(r.path, 0600));
  if (r.file.existed && !r.file.doc.empty()) {
    if (!r.file.doc.contains("files") || !r.file.doc["files"].is_object()) {
      return absl::InvalidArgumentError(base::StrCat(r.path, " is not a contextd connect record"));
    }
    r.doc = r.file.doc;
  }
  return r;
}

OJson* FindKeyRecord(OJson& file_record, const std::string& parent, const std::string& key) {
  if (!file_record.contains("keys") || !file_record["keys"].is_array()) return nullptr;
  for (OJson& k : file_record["keys"]) {
    if (k.value("parent", "") == parent && k.value("key", "") == key) return &k;
  }
  return nullptr;
}

// Checks that doc[parent], when present, is an object.
absl::Status CheckParent(const JsonFile& f, const std::string& parent) {
  if (f.doc.contains(parent) && !f.doc[parent].is_object()) {
    return absl::InvalidArgumentError(
        base::StrCat(f.path, ": \"", parent, "\" is not a JSON object; nothing was changed"));
  }
  return absl::OkStatus();
}

std::string ScopeText(ClaudeCodeScope scope, const std::string& project) {
  return scope == ClaudeCodeScope::kUser ? "user scope" : base::StrCat("project ", project);
}

absl::Status Connect(const ConnectCommand& c, ClaudeCodeScope scope, const std::string& project,
                     const ClaudeCodeFiles& files, std::ostream& out) {
  std::string url = StripTrailingSlash(c.url);
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError(
        base::StrCat("--url must start with http:// or https://, got '", c.url, "'"));
  }
  std::vector<Edit> edits = {
      {files.mcp_file, kMcpServers, kServerName, OJson{{"type", "http"}, {"url", url + "/mcp"}}},
      {files.settings_file, kEnv, kBaseUrlVar, OJson(url)},
  };
  // Read everything before changing anything.
  ASSIGN_OR_RETURN(Record record, LoadRecord(c.data_dir));
  std::map<std::string, JsonFile> loaded;
  for (const Edit& e : edits) {
    if (loaded.count(e.file)) continue;
    // ~/.claude.json holds Claude Code's private state: created private, as Claude Code does.
    mode_t mode = (scope == ClaudeCodeScope::kUser && e.file == files.mcp_file) ? 0600 : 0644;
    ASSIGN_OR_RETURN(JsonFile f, ReadJsonFile(e.file, mode));
    loaded.emplace(e.file, std::move(f));
  }
  for (const Edit& e : edits) RETURN_IF_ERROR(CheckParent(loaded.at(e.file), e.parent));

  std::map<std::string, OJson> docs;
  std::vector<std::string> lines;
  OJson& files_record = record.doc["files"];
  for (const Edit& e : edits) {
    JsonFile& f = loaded.at(e.file);
    OJson& doc = docs.emplace(e.file, f.doc).first->second;
    bool had_parent = doc.contains(e.parent);
    bool had_key = had_parent && doc[e.parent].contains(e.key);
    if (had_key && SameJson(doc[e.parent][e.key], e.value)) {
      lines.push_back(
          base::StrCat("  ", e.file, ": ", e.parent, ".", e.key, " already ", Compact(e.value)));
      continue;
    }
    if (!files_record.contains(e.file)) {
      files_record[e.file] = OJson{{"created", !f.existed}, {"keys", OJson::array()}};
    }
    OJson* k = FindKeyRecord(files_record[e.file], e.parent, e.key);
    if (k == nullptr) {
      OJson fresh{{"parent", e.parent}, {"key", e.key}, {"parent_created", !had_parent}};
      if (had_key) fresh["previous"] = doc[e.parent][e.key];
      files_record[e.file]["keys"].push_back(std::move(fresh));
      k = &files_record[e.file]["keys"].back();
    }
    (*k)["written"] = e.value;
    std::string was = had_key ? base::StrCat("  (was ", Compact(doc[e.parent][e.key]), ")") : "";
    if (!had_parent) doc[e.parent] = OJson::object();
    doc[e.parent][e.key] = e.value;
    lines.push_back(base::StrCat("  ", e.file, ": ", had_key ? "~ " : "+ ", e.parent, ".", e.key,
                                 " = ", Compact(e.value), was));
  }
  bool changed = false;
  for (const auto& [path, doc] : docs) changed |= doc != loaded.at(path).doc;

  out << (c.dry_run ? "would connect"
          : changed ? "connected"
                    : "already connected")
      << " Claude Code to contextd at " << url << " (" << ScopeText(scope, project) << "):\n";
  for (const std::string& l : lines) out << l << "\n";
  if (c.dry_run) {
    out << "dry run: nothing was written\n";
    return absl::OkStatus();
  }
  if (changed) {
    // The record first: a crash between the writes still leaves a way back.
    RETURN_IF_ERROR(WriteJsonFile(record.file, record.doc));
    for (const auto& [path, doc] : docs) {
      if (doc != loaded.at(path).doc) RETURN_IF_ERROR(WriteJsonFile(loaded.at(path), doc));
    }
    out << "previous values saved in " << record.path << "; `contextd connect claude-code"
        << (scope == ClaudeCodeScope::kUser ? " --user"
            : c.project_dir.empty()         ? ""
                                            : " --project " + project)
        << (c.data_dir.empty() ? "" : " --data-dir " + c.data_dir) << " --undo` restores them\n";
  }
  if (scope == ClaudeCodeScope::kProject) {
    // settings.local.json overrides settings.json: say so when it points elsewhere.
    auto local =
        ReadJsonFile((fs::path(project) / ".claude" / "settings.local.json").string(), 0644);
    if (local.ok() && local->doc.contains(kEnv) && local->doc[kEnv].is_object() &&
        local->doc[kEnv].contains(kBaseUrlVar) &&
        !SameJson(local->doc[kEnv][kBaseUrlVar], OJson(url))) {
      out << "warning: " << local->path << " sets " << kBaseUrlVar << " = "
          << Compact(local->doc[kEnv][kBaseUrlVar]) << ", which overrides " << files.settings_file
          << "\n";
    }
  }
  out << "next: start contextd: contextd serve; then run claude"
      << (scope == ClaudeCodeScope::kProject ? base::StrCat(" in ", project) : "") << "\n";
  if (scope == ClaudeCodeScope::kProject) {
    out << "(Claude Code asks once to approve the project MCP server `contextd` from .mcp.json; "
           "`claude -p` uses it without asking)\n";
  }
  return absl::OkStatus();
}

absl::Status Undo(const ConnectCommand& c, ClaudeCodeScope scope, const std::string& project,
                  const ClaudeCodeFiles& files, std::ostream& out) {
  ASSIGN_OR_RETURN(Record record, LoadRecord(c.data_dir));
  OJson& files_record = record.doc["files"];
  std::vector<std::string> lines;
  std::map<std::string, std::pair<JsonFile, OJson>> results;
  for (const std::string& path : {files.mcp_file, files.settings_file}) {
    if (!files_record.contains(path) || results.count(path)) continue;
    ASSIGN_OR_RETURN(JsonFile f, ReadJsonFile(path, 0644));
    OJson doc = f.doc;
    const OJson& fr = files_record[path];
    for (const OJson& k : fr.value("keys", OJson::array())) {
      std::string parent = k.value("parent", ""), key = k.value("key", "");
      bool present = doc.contains(parent) && doc[parent].is_object() && doc[parent].contains(key);
      if (!present || !SameJson(doc[parent][key], k.value("written", OJson()))) {
        lines.push_back(base::StrCat("  ", path, ": ", parent, ".", key,
                                     " changed since connect; left as it is"));
        continue;
      }
      if (k.contains("previous")) {
        doc[parent][key] = k["previous"];
        lines.push_back(base::StrCat("  ", path, ": ~ ", parent, ".", key, " = ",
                                     Compact(k["previous"]), " (restored)"));
      } else {
        doc[parent].erase(key);
        if (k.value("parent_created", false) && doc[parent].empty()) doc.erase(parent);
        lines.push_back(base::StrCat("  ", path, ": - ", parent, ".", key));
      }
    }
    results.emplace(path, std::make_pair(std::move(f), std::move(doc)));
  }
  if (results.empty()) {
    out << "nothing to undo for Claude Code (" << ScopeText(scope, project) << "): no record in "
        << record.path << "\n";
    return absl::OkStatus();
  }
  out << (c.dry_run ? "would restore" : "restored") << " Claude Code's previous configuration ("
      << ScopeText(scope, project) << "):\n";
  for (const std::string& l : lines) out << l << "\n";
  if (c.dry_run) {
    out << "dry run: nothing was written\n";
    return absl::OkStatus();
  }
  for (auto& [path, r] : results) {
    auto& [f, doc] = r;
    if (files_record[path].value("created", false) && doc.empty()) {
      // connect created the file and nothing else is in it: remove it again.
      std::error_code ec;
      if (f.existed) fs::remove(f.real, ec);
      if (ec)
        return absl::FailedPreconditionError(
            base::StrCat("cannot remove ", path, ": ", ec.message()));
      out << "  removed " << path << " (connect had created it)\n";
    } else if (doc != f.doc) {
      RETURN_IF_ERROR(WriteJsonFile(f, doc));
    }
    files_record.erase(path);
  }
  if (files_record.empty()) {
    std::error_code ec;
    fs::remove(record.file.real, ec);
  } else {
    RETURN_IF_ERROR(WriteJsonFile(record.file, record.doc));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClaudeCodeFiles> ResolveClaudeCodeFiles(ClaudeCodeScope scope,
                                                       const std::string& project_dir,
                                                       const ClaudeCodeEnvironment& env) {
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
                                                              const ClaudeCodeEnvironment& env) {
  ClaudeCodeConnection c;
  ASSIGN_OR_RETURN(c.files, ResolveClaudeCodeFiles(scope, project_dir, env));
  ASSIGN_OR_RETURN(JsonFile mcp, ReadJsonFile(c.files.mcp_file, 0644));
  ASSIGN_OR_RETURN(JsonFile settings, ReadJsonFile(c.files.settings_file, 0644));
  const OJson& servers = mcp.doc.value(kMcpServers, OJson::object());
  if (servers.is_object() && servers.contains(kServerName) && servers[kServerName].is_object() &&
      servers[kServerName].contains("url") && servers[kServerName]["url"].is_string()) {
    c.mcp_url = servers[kServerName]["url"].get<std::string>();
  }
  const OJson& envs = settings.doc.value(kEnv, OJson::object());
  if (envs.is_object() && envs.contains(kBaseUrlVar) && envs[kBaseUrlVar].is_string()) {
    c.base_url = envs[kBaseUrlVar].get<std::string>();
  }
  return c;
}

int RunConnectCommand(const ConnectCommand& command, const ClaudeCodeEnvironment& env,
                      std::ostream& out, std::ostream& err) {
  absl::Status st;
  if (command.client != "claude-code") {
    st = absl::InvalidArgumentError(
        base::StrCat("unknown client '", command.client, "' (known: claude-code)"));
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
      st = Undo(command, scope, project, *files, out);
    } else {
      st = Connect(command, scope, project, *files, out);
    }
  }
  if (!st.ok()) {
    err << "contextd connect " << command.client << ": " << st.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace contextd::server
