#include "cli/connect_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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
  EXPECT_EQ(Read(SettingsFile()), kSettingsWritten);
  EXPECT_THAT(out_.str(), HasSubstr("connected Claude Code to contextd at http://127.0.0.1:9090"));
  EXPECT_THAT(out_.str(), HasSubstr(McpFile() + ": + mcpServers.contextd"));
  EXPECT_THAT(out_.str(), HasSubstr(SettingsFile() + ": + env.ANTHROPIC_BASE_URL"));
  EXPECT_THAT(out_.str(), HasSubstr("next: start contextd: contextd serve; then run claude"));
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
      "    \"ALPHA\": \"2\"\n  },\n  \"model\": \"opus\"\n}\n");
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
}

TEST_F(ConnectTest, WarnsWhenSettingsLocalOverridesTheBaseUrl) {
  Write(project_ + "/.claude/settings.local.json",
        "{\"env\": {\"ANTHROPIC_BASE_URL\": \"https://x\"}}");
  ASSERT_EQ(Connect(), 0);
  EXPECT_THAT(out_.str(), HasSubstr("settings.local.json sets ANTHROPIC_BASE_URL"));
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
