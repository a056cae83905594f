#include "cli/connect_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/internal/header_lines.h"
#include "nlohmann/json.hpp"
#include "tools/session_key.h"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ConnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "contextd_connect_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    project_ = root_ + "/project";
    fs::create_directories(project_);
    fs::create_directories(root_ + "/home");
    env_.home = root_ + "/home";
    env_.cwd = project_;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Runs connect with `flags` applied to a default project-scope command.
  int Run(ConnectCommand c) {
    c.data_dir = root_ + "/data";
    out_.str("");
    err_.str("");
    return RunConnectCommand(c, env_, out_, err_);
  }
  int Connect() { return Run(ConnectCommand{}); }
  int Undo() {
    ConnectCommand c;
    c.undo = true;
    return Run(c);
  }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  // What a fresh project-scope connect writes into .claude/settings.json.
  std::string ProjectSettingsWritten() const {
    return "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"http://127.0.0.1:9090\",\n"
           "    \"ANTHROPIC_CUSTOM_HEADERS\": \"X-Contextd-Project: " +
           project_ + "\"\n  }\n}\n";
  }
  // env.ANTHROPIC_CUSTOM_HEADERS of a settings file ("" when absent).
  static std::string HeadersIn(const std::string& settings_path) {
    nlohmann::json j = nlohmann::json::parse(Read(settings_path));
    return j["env"].value("ANTHROPIC_CUSTOM_HEADERS", "");
  }
  std::string McpFile() const { return project_ + "/.mcp.json"; }
  std::string SettingsFile() const { return project_ + "/.claude/settings.json"; }

  std::string root_, project_;
  AgentEnvironment env_;
  std::ostringstream out_, err_;
};

constexpr char kMcpWritten[] =
    "{\n  \"mcpServers\": {\n    \"contextd\": {\n      \"type\": \"http\",\n"
    "      \"url\": \"http://127.0.0.1:9090/mcp\"\n    }\n  }\n}\n";
constexpr char kSettingsWritten[] =
    "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"http://127.0.0.1:9090\"\n  }\n}\n";

TEST_F(ConnectTest, FreshProjectGetsBothFiles) {
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(Read(McpFile()), kMcpWritten);
  EXPECT_EQ(Read(SettingsFile()), ProjectSettingsWritten());
  EXPECT_THAT(out_.str(), HasSubstr("connected Claude Code to contextd at http://127.0.0.1:9090"));
  EXPECT_THAT(out_.str(), HasSubstr(McpFile() + ": + mcpServers.contextd"));
  EXPECT_THAT(out_.str(), HasSubstr(SettingsFile() + ": + env.ANTHROPIC_BASE_URL"));
  EXPECT_THAT(out_.str(), HasSubstr(SettingsFile() +
                                    ": + env.ANTHROPIC_CUSTOM_HEADERS line X-Contextd-Project"
                                    " = \"" +
                                    project_ + "\""));
  EXPECT_THAT(out_.str(), HasSubstr("next: start contextd: contextd serve; then run claude"));
  // Undo takes everything away again: both files were connect's.
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_FALSE(fs::exists(McpFile()));
  EXPECT_FALSE(fs::exists(SettingsFile()));
}

TEST_F(ConnectTest, KeepsOtherKeysInTheirOrder) {
  const std::string settings =
      "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(git:*)\"\n    ]\n  },\n"
      "  \"env\": {\n    \"ZED\": \"1\",\n    \"ANTHROPIC_BASE_URL\": \"https://gw.example\",\n"
      "    \"ALPHA\": \"2\"\n  },\n  \"model\": \"opus\"\n}\n";
  const std::string mcp =
      "{\n  \"mcpServers\": {\n    \"zeta\": {\n      \"command\": \"z\"\n    }\n  },\n"
      "  \"other\": true\n}\n";
  Write(SettingsFile(), settings);
  Write(McpFile(), mcp);
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(
      Read(SettingsFile()),
      "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(git:*)\"\n    ]\n  },\n"
      "  \"env\": {\n    \"ZED\": \"1\",\n    \"ANTHROPIC_BASE_URL\": \"http://127.0.0.1:9090\",\n"
      "    \"ALPHA\": \"2\",\n    \"ANTHROPIC_CUSTOM_HEADERS\": \"X-Contextd-Project: " +
          project_ + "\"\n  },\n  \"model\": \"opus\"\n}\n");
  EXPECT_EQ(Read(McpFile()),
            "{\n  \"mcpServers\": {\n    \"zeta\": {\n      \"command\": \"z\"\n    },\n"
            "    \"contextd\": {\n      \"type\": \"http\",\n      \"url\": "
            "\"http://127.0.0.1:9090/mcp\"\n"
            "    }\n  },\n  \"other\": true\n}\n");
  EXPECT_THAT(out_.str(), HasSubstr("(was \"https://gw.example\")"));

  // Undo restores exactly the previous values, in place.
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(SettingsFile()), settings);
  EXPECT_EQ(Read(McpFile()), mcp);
  EXPECT_THAT(out_.str(), HasSubstr("env.ANTHROPIC_BASE_URL = \"https://gw.example\" (restored)"));
}

TEST_F(ConnectTest, TwiceIsIdempotentAndUndoStillRestoresTheOriginal) {
  const std::string settings =
      "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"https://gw.example\"\n  }\n}\n";
  Write(SettingsFile(), settings);
  ASSERT_EQ(Connect(), 0) << err_.str();
  std::string mcp_after = Read(McpFile()), settings_after = Read(SettingsFile());
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("already connected"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("previous values saved")));
  EXPECT_EQ(Read(McpFile()), mcp_after);
  EXPECT_EQ(Read(SettingsFile()), settings_after);

  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(SettingsFile()), settings);
  // connect created .mcp.json and nothing else is in it: gone again.
  EXPECT_FALSE(fs::exists(McpFile()));
  // The record is used up: a second undo has nothing to do.
  ASSERT_EQ(Undo(), 0);
  EXPECT_THAT(out_.str(), HasSubstr("nothing to undo"));
}

TEST_F(ConnectTest, ConnectWithAnotherUrlKeepsTheFirstPreviousValue) {
  Write(SettingsFile(), "{\"env\": {\"ANTHROPIC_BASE_URL\": \"https://gw.example\"}}");
  ASSERT_EQ(Connect(), 0);
  ConnectCommand other;
  other.url = "http://127.0.0.1:9191/";
  ASSERT_EQ(Run(other), 0) << err_.str();
  EXPECT_THAT(Read(SettingsFile()), HasSubstr("\"http://127.0.0.1:9191\""));
  EXPECT_THAT(Read(McpFile()), HasSubstr("\"http://127.0.0.1:9191/mcp\""));
  ASSERT_EQ(Undo(), 0);
  EXPECT_EQ(Read(SettingsFile()),
            "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"https://gw.example\"\n  }\n}\n");
}

TEST_F(ConnectTest, UndoRemovesOnlyWhatConnectAdded) {
  Write(SettingsFile(), "{\n  \"model\": \"opus\"\n}\n");
  ASSERT_EQ(Connect(), 0);
  // The user adds something after connect: undo keeps it.
  Write(McpFile(),
        "{\"mcpServers\": {\"contextd\": {\"type\": \"http\", \"url\": "
        "\"http://127.0.0.1:9090/mcp\"}, \"mine\": {\"command\": \"m\"}}}");
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(SettingsFile()), "{\n  \"model\": \"opus\"\n}\n");
  EXPECT_EQ(Read(McpFile()),
            "{\n  \"mcpServers\": {\n    \"mine\": {\n      \"command\": \"m\"\n    }\n  }\n}\n");
}

TEST_F(ConnectTest, UndoLeavesAValueChangedSinceConnect) {
  ASSERT_EQ(Connect(), 0);
  Write(SettingsFile(), "{\"env\": {\"ANTHROPIC_BASE_URL\": \"https://mine.example\"}}");
  ASSERT_EQ(Undo(), 0);
  EXPECT_THAT(out_.str(), HasSubstr("changed since connect; left as it is"));
  EXPECT_EQ(Read(SettingsFile()), "{\"env\": {\"ANTHROPIC_BASE_URL\": \"https://mine.example\"}}");
  EXPECT_FALSE(fs::exists(McpFile()));
}

TEST_F(ConnectTest, InvalidJsonIsAnErrorAndNothingIsWritten) {
  const std::string broken = "{\n  \"env\": {\"A\": 1,}\n";
  Write(SettingsFile(), broken);
  EXPECT_EQ(Connect(), 2);
  EXPECT_THAT(err_.str(), HasSubstr(SettingsFile() + " is not valid JSON"));
  EXPECT_EQ(Read(SettingsFile()), broken);
  EXPECT_FALSE(fs::exists(McpFile()));
  EXPECT_FALSE(fs::exists(root_ + "/data/connect/claude-code.json"));
}

TEST_F(ConnectTest, NonObjectParentIsAnError) {
  Write(McpFile(), "{\"mcpServers\": []}");
  EXPECT_EQ(Connect(), 2);
  EXPECT_THAT(err_.str(), HasSubstr("\"mcpServers\" is not a JSON object"));
  EXPECT_FALSE(fs::exists(SettingsFile()));
}

TEST_F(ConnectTest, DryRunWritesNothing) {
  ConnectCommand c;
  c.dry_run = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("would connect"));
  EXPECT_THAT(
      out_.str(),
      HasSubstr(
          "+ mcpServers.contextd = {\"type\":\"http\",\"url\":\"http://127.0.0.1:9090/mcp\"}"));
  EXPECT_THAT(out_.str(), HasSubstr("dry run: nothing was written"));
  EXPECT_FALSE(fs::exists(McpFile()));
  EXPECT_FALSE(fs::exists(project_ + "/.claude"));
  EXPECT_FALSE(fs::exists(root_ + "/data"));

  ASSERT_EQ(Connect(), 0);
  std::string settings = Read(SettingsFile());
  ConnectCommand undo;
  undo.undo = true;
  undo.dry_run = true;
  ASSERT_EQ(Run(undo), 0);
  EXPECT_THAT(out_.str(), HasSubstr("would restore"));
  EXPECT_EQ(Read(SettingsFile()), settings);
  EXPECT_TRUE(fs::exists(root_ + "/data/connect/claude-code.json"));
}

TEST_F(ConnectTest, KeepsTheFileModeAndFollowsSymlinks) {
  Write(root_ + "/dotfiles/settings.json", "{\"model\": \"opus\"}");
  fs::create_directories(project_ + "/.claude");
  fs::create_symlink(root_ + "/dotfiles/settings.json", SettingsFile());
  Write(McpFile(), "{}");
  ASSERT_EQ(::chmod(McpFile().c_str(), 0640), 0);
  ASSERT_EQ(Connect(), 0) << err_.str();
  struct stat st {};
  ASSERT_EQ(::stat(McpFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640);
  EXPECT_TRUE(fs::is_symlink(SettingsFile()));
  EXPECT_THAT(Read(root_ + "/dotfiles/settings.json"), HasSubstr("ANTHROPIC_BASE_URL"));
}

TEST_F(ConnectTest, ProjectOptionAndMissingDirectory) {
  fs::create_directories(root_ + "/other");
  ConnectCommand c;
  c.project_dir = "../other";  // relative to the current directory
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_TRUE(fs::exists(root_ + "/other/.mcp.json"));
  EXPECT_FALSE(fs::exists(McpFile()));
  c.project_dir = root_ + "/missing";
  EXPECT_EQ(Run(c), 2);
  EXPECT_THAT(err_.str(), HasSubstr("does not exist"));
}

TEST_F(ConnectTest, UserScopeUsesHome) {
  Write(env_.home + "/.claude.json", "{\n  \"numStartups\": 3,\n  \"projects\": {}\n}\n");
  ConnectCommand c;
  c.user = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_EQ(
      Read(env_.home + "/.claude.json"),
      "{\n  \"numStartups\": 3,\n  \"projects\": {},\n  \"mcpServers\": {\n    \"contextd\": {\n"
      "      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:9090/mcp\"\n    }\n  }\n}\n");
  EXPECT_EQ(Read(env_.home + "/.claude/settings.json"), kSettingsWritten);
  EXPECT_FALSE(fs::exists(McpFile()));
  c.undo = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_EQ(Read(env_.home + "/.claude.json"), "{\n  \"numStartups\": 3,\n  \"projects\": {}\n}\n");
  EXPECT_FALSE(fs::exists(env_.home + "/.claude/settings.json"));
}

TEST_F(ConnectTest, UserScopeNewGlobalConfigIsPrivate) {
  ConnectCommand c;
  c.user = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  struct stat st {};
  ASSERT_EQ(::stat((env_.home + "/.claude.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0);
}

TEST(ResolveClaudeCodeFilesTest, ClaudeConfigDirAndLegacyFile) {
  AgentEnvironment env;
  env.home = "/h";
  env.cwd = "/w";
  auto p = ResolveClaudeCodeFiles(ClaudeCodeScope::kProject, "", env);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->mcp_file, "/w/.mcp.json");
  EXPECT_EQ(p->settings_file, "/w/.claude/settings.json");
  auto u = ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mcp_file, "/h/.claude.json");
  EXPECT_EQ(u->settings_file, "/h/.claude/settings.json");
  env.claude_config_dir = "/cfg";
  u = ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mcp_file, "/cfg/.claude.json");
  EXPECT_EQ(u->settings_file, "/cfg/settings.json");
  env = {};
  EXPECT_FALSE(ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env).ok());
}

TEST_F(ConnectTest, LegacyGlobalConfigWhenItIsTheOnlyOne) {
  Write(env_.home + "/.claude/.config.json", "{\"legacy\": true}");
  auto u = ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env_);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mcp_file, env_.home + "/.claude/.config.json");
  Write(env_.home + "/.claude.json", "{}");
  u = ResolveClaudeCodeFiles(ClaudeCodeScope::kUser, "", env_);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->mcp_file, env_.home + "/.claude.json");
}

TEST_F(ConnectTest, ReadConnectionSeesWhatConnectWrote) {
  auto before = ReadClaudeCodeConnection(ClaudeCodeScope::kProject, "", env_);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->mcp_url.has_value());
  EXPECT_FALSE(before->base_url.has_value());
  ASSERT_EQ(Connect(), 0);
  auto after = ReadClaudeCodeConnection(ClaudeCodeScope::kProject, "", env_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->mcp_url, "http://127.0.0.1:9090/mcp");
  EXPECT_EQ(after->base_url, "http://127.0.0.1:9090");
  EXPECT_EQ(after->project_header, project_);
}

TEST_F(ConnectTest, WarnsWhenSettingsLocalOverridesTheBaseUrl) {
  Write(project_ + "/.claude/settings.local.json",
        "{\"env\": {\"ANTHROPIC_BASE_URL\": \"https://x\"}}");
  ASSERT_EQ(Connect(), 0);
  EXPECT_THAT(out_.str(), HasSubstr("settings.local.json sets ANTHROPIC_BASE_URL"));
}

// The model gateway's project (the header, tools::ProjectFromHeader) is the MCP session's
// (Claude Code's first root: its working directory, tools::ProjectFromRoots), symlink or not.
TEST_F(ConnectTest, TheProjectHeaderNamesTheMcpSessionsProject) {
  fs::create_directory_symlink(project_, root_ + "/link");
  for (const std::string& dir : {project_, root_ + "/link"}) {
    ConnectCommand c;
    c.project_dir = dir;
    ASSERT_EQ(Run(c), 0) << err_.str();
    std::optional<std::string> value =
        internal::HeaderLineValue(HeadersIn(dir + "/.claude/settings.json"), kProjectHeader);
    ASSERT_EQ(value, dir);
    auto from_header = tools::ProjectFromHeader(*value);
    ASSERT_TRUE(from_header.ok()) << from_header.status();
    auto from_roots =
        tools::ProjectFromRoots(nlohmann::json::array({{{"uri", "file://" + dir}, {"name", "p"}}}));
    ASSERT_TRUE(from_roots.ok()) << from_roots.status();
    EXPECT_EQ(from_header->id, from_roots->id);
    EXPECT_EQ(from_header->id, tools::ProjectForPath(project_).id);
    EXPECT_EQ(from_header->id.rfind("p_", 0), 0u) << from_header->id;
  }
}

TEST_F(ConnectTest, MergesIntoExistingCustomHeadersAndUndoRestoresTheLine) {
  Write(SettingsFile(),
        "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": "
        "\"X-Team: blue\\nx-contextd-project: team-board\\r\\n  X-Trace : 1\\n\"}}");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(HeadersIn(SettingsFile()),
            "X-Team: blue\nX-Contextd-Project: " + project_ + "\r\n  X-Trace : 1\n");
  EXPECT_THAT(out_.str(), HasSubstr("~ env.ANTHROPIC_CUSTOM_HEADERS line X-Contextd-Project = \"" +
                                    project_ + "\"  (was \"team-board\")"));
  // Again: nothing to do, nothing written.
  const std::string after = Read(SettingsFile());
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("already connected"));
  EXPECT_EQ(Read(SettingsFile()), after);
  // The user adds a line after connect; undo puts the old project back and keeps the new line.
  nlohmann::json j = nlohmann::json::parse(after);
  j["env"]["ANTHROPIC_CUSTOM_HEADERS"] = HeadersIn(SettingsFile()) + "X-Later: 2";
  Write(SettingsFile(), j.dump());
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(HeadersIn(SettingsFile()),
            "X-Team: blue\nX-Contextd-Project: team-board\r\n  X-Trace : 1\nX-Later: 2");
  EXPECT_THAT(out_.str(),
              HasSubstr("~ env.ANTHROPIC_CUSTOM_HEADERS line X-Contextd-Project = \"team-board\" "
                        "(restored)"));
}

TEST_F(ConnectTest, UndoRemovesOnlyTheLineAndTheVariableWhenNothingElseIsLeft) {
  Write(SettingsFile(), "{\"env\": {\"A\": \"1\"}}");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(HeadersIn(SettingsFile()), "X-Contextd-Project: " + project_);
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(SettingsFile()), "{\n  \"env\": {\n    \"A\": \"1\"\n  }\n}\n");
  EXPECT_THAT(out_.str(), HasSubstr("- env.ANTHROPIC_CUSTOM_HEADERS line X-Contextd-Project"));

  // Other lines present: only ours goes, theirs stay byte for byte.
  Write(SettingsFile(), "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": \"X-Team: blue\\n\"}}");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(HeadersIn(SettingsFile()), "X-Team: blue\nX-Contextd-Project: " + project_ + "\n");
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(HeadersIn(SettingsFile()), "X-Team: blue\n");
}

TEST_F(ConnectTest, UndoLeavesAProjectLineChangedSinceConnect) {
  ASSERT_EQ(Connect(), 0) << err_.str();
  nlohmann::json j = nlohmann::json::parse(Read(SettingsFile()));
  j["env"]["ANTHROPIC_CUSTOM_HEADERS"] = "X-Contextd-Project: my-own-id";
  Write(SettingsFile(), j.dump());
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("env.ANTHROPIC_CUSTOM_HEADERS line X-Contextd-Project changed "
                                    "since connect; left as it is"));
  EXPECT_EQ(HeadersIn(SettingsFile()), "X-Contextd-Project: my-own-id");
}

TEST_F(ConnectTest, CustomHeadersThatAreNotAStringAreAnError) {
  const std::string settings = "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": [\"X-A: 1\"]}}";
  Write(SettingsFile(), settings);
  EXPECT_EQ(Connect(), 2);
  EXPECT_THAT(err_.str(), HasSubstr("env.ANTHROPIC_CUSTOM_HEADERS is not a string"));
  EXPECT_EQ(Read(SettingsFile()), settings);
  EXPECT_FALSE(fs::exists(McpFile()));
}

TEST_F(ConnectTest, UserScopeNamesNoProjectAndKeepsTheUsersHeaders) {
  const std::string user_settings = env_.home + "/.claude/settings.json";
  Write(user_settings, "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": \"X-Team: blue\"}}");
  ConnectCommand c;
  c.user = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_EQ(HeadersIn(user_settings), "X-Team: blue");
  EXPECT_THAT(out_.str(), HasSubstr("note: no X-Contextd-Project at user scope"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("line X-Contextd-Project")));
}

TEST_F(ConnectTest, WarnsWhereAnotherSettingsFileDecidesTheHeaders) {
  Write(project_ + "/.claude/settings.local.json",
        "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": \"X-Local: 1\"}}");
  Write(env_.home + "/.claude/settings.json",
        "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": \"X-Team: blue\"}}");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("settings.local.json sets ANTHROPIC_CUSTOM_HEADERS, which "
                                    "overrides " +
                                    SettingsFile() + "'s; add the line `X-Contextd-Project: " +
                                    project_ + "` to it"));
  EXPECT_THAT(out_.str(), HasSubstr(env_.home + "/.claude/settings.json sets "
                                                "ANTHROPIC_CUSTOM_HEADERS; in this project"));
  // With the line in settings.local.json and no other user header: no warning.
  Write(project_ + "/.claude/settings.local.json",
        "{\"env\": {\"ANTHROPIC_CUSTOM_HEADERS\": \"X-Contextd-Project: " + project_ + "\"}}");
  Write(env_.home + "/.claude/settings.json", "{}");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("warning")));
}

TEST_F(ConnectTest, BadUrlAndUnknownClient) {
  ConnectCommand c;
  c.url = "127.0.0.1:9090";
  EXPECT_EQ(Run(c), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--url must start with http://"));
  c = {};
  c.client = "cursor";
  EXPECT_EQ(Run(c), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown client"));
}

}  // namespace
}  // namespace contextd::cli
