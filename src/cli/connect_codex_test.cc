#include "cli/connect_codex.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/internal/toml_document.h"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFresh[] =
    "model_provider = \"contextd\"\n"
    "\n"
    "[mcp_servers.contextd]\n"
    "url = \"http://127.0.0.1:9090/mcp\"\n"
    "\n"
    "[model_providers.contextd]\n"
    "name = \"contextd\"\n"
    "base_url = \"http://127.0.0.1:9090/v1\"\n"
    "wire_api = \"responses\"\n"
    "env_key = \"OPENAI_API_KEY\"\n";

// A user's config: comments everywhere, a previous provider, an old contextd server with a
// sub-table, a multi-line string holding a line that looks like a header.
constexpr char kUsers[] =
    "# my codex config\n"
    "model = \"gpt-5.5\"  # the default model\n"
    "model_provider = \"openai\" # was openai\n"
    "instructions = \"\"\"\n"
    "[not.a.table]\n"
    "\"\"\"\n"
    "args = [\n"
    "  [1, 2],\n"
    "]\n"
    "\n"
    "# features I like\n"
    "[features]\n"
    "plugins = false\n"
    "\n"
    "[mcp_servers.contextd]\n"
    "# an older contextd\n"
    "url = \"http://old:1/mcp\"\n"
    "\n"
    "[mcp_servers.contextd.env]\n"
    "A = \"b\"\n"
    "\n"
    "# the next server is mine\n"
    "[mcp_servers.other]\n"
    "command = \"other\"\n"
    "\n"
    "[projects.\"/tmp/x\"]\n"
    "trust_level = \"trusted\"\n";

class ConnectCodexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "contextd_connect_codex_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/home");
    env_.home = root_ + "/home";
    env_.codex_home = root_ + "/codex";
    env_.cwd = root_;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  int Run(ConnectCommand c) {
    c.client = "codex";
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
  std::string Config() const { return root_ + "/codex/config.toml"; }
  std::string RecordFile() const { return root_ + "/data/connect/codex.json"; }

  std::string root_;
  AgentEnvironment env_;
  std::ostringstream out_, err_;
};

TEST_F(ConnectCodexTest, FreshCodexHomeGetsTheConfigAndUndoRemovesIt) {
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), kFresh);
  struct stat st {};
  ASSERT_EQ(::stat(Config().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(out_.str(), HasSubstr("connected Codex to contextd at http://127.0.0.1:9090"));
  EXPECT_THAT(out_.str(), HasSubstr(Config() + ": + model_provider = \"contextd\""));
  EXPECT_THAT(out_.str(), HasSubstr(Config() + ": + mcp_servers.contextd = {url = "
                                               "\"http://127.0.0.1:9090/mcp\"}"));
  EXPECT_THAT(out_.str(), HasSubstr("`contextd connect codex --data-dir " + root_ +
                                    "/data --undo` restores them"));

  auto c = ReadCodexConnection(env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config_file, Config());
  EXPECT_EQ(c->mcp_url, "http://127.0.0.1:9090/mcp");
  EXPECT_EQ(c->base_url, "http://127.0.0.1:9090/v1");
  EXPECT_EQ(c->model_provider, "contextd");

  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_FALSE(fs::exists(Config()));
  EXPECT_FALSE(fs::exists(RecordFile()));
  EXPECT_THAT(out_.str(), HasSubstr("removed " + Config()));
}

TEST_F(ConnectCodexTest, KeepsEverythingElseAndUndoRestoresTheBytes) {
  Write(Config(), kUsers);
  ASSERT_EQ(Connect(), 0) << err_.str();
  std::string after = Read(Config());
  // The previous provider is replaced where it stood; comments and other tables stay.
  EXPECT_THAT(after, HasSubstr("model = \"gpt-5.5\"  # the default model\n"
                               "model_provider = \"contextd\"\n"
                               "instructions = \"\"\"\n[not.a.table]\n"));
  EXPECT_THAT(after, Not(HasSubstr("openai")));
  EXPECT_THAT(after, HasSubstr("# features I like\n[features]\nplugins = false\n\n"
                               "[mcp_servers.contextd]\nurl = \"http://127.0.0.1:9090/mcp\"\n\n"
                               "# the next server is mine\n[mcp_servers.other]\n"));
  EXPECT_THAT(after, Not(HasSubstr("http://old:1")));
  EXPECT_THAT(after, Not(HasSubstr("[mcp_servers.contextd.env]")));
  EXPECT_THAT(after, HasSubstr("trust_level = \"trusted\"\n\n[model_providers.contextd]\n"));
  EXPECT_THAT(out_.str(), HasSubstr(": ~ model_provider = \"contextd\"  (was \"openai\" # was "
                                    "openai)"));
  auto c = ReadCodexConnection(env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_provider, "contextd");

  // Twice: nothing changes, and the first previous values are kept for undo.
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("already connected Codex"));
  EXPECT_EQ(Read(Config()), after);

  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), kUsers);
  EXPECT_THAT(out_.str(), HasSubstr("restored Codex's previous configuration"));
  EXPECT_FALSE(fs::exists(RecordFile()));
}

TEST_F(ConnectCodexTest, ConnectWithAnotherUrlKeepsTheFirstPreviousValue) {
  Write(Config(), kUsers);
  ASSERT_EQ(Connect(), 0) << err_.str();
  ConnectCommand other;
  other.url = "http://127.0.0.1:7000/";
  ASSERT_EQ(Run(other), 0) << err_.str();
  EXPECT_THAT(Read(Config()), HasSubstr("base_url = \"http://127.0.0.1:7000/v1\""));
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), kUsers);
}

TEST_F(ConnectCodexTest, TopLevelKeyGoesBeforeTheFirstTable) {
  const std::string before =
      "[features]\nplugins = false\n\n# servers\n[mcp_servers.docs]\nurl = \"http://d\"\n";
  Write(Config(), before);
  ASSERT_EQ(Connect(), 0) << err_.str();
  std::string after = Read(Config());
  EXPECT_EQ(after.rfind("model_provider = \"contextd\"\n[features]\n", 0), 0u) << after;
  auto c = ReadCodexConnection(env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_provider, "contextd");

  // Comment lines directly above the first header stay with it.
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), before);
  const std::string commented = "# Codex\nmodel = \"m\"\n\n# tables\n[features]\nx = 1\n";
  Write(Config(), commented);
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_THAT(Read(Config()),
              HasSubstr("model = \"m\"\nmodel_provider = \"contextd\"\n\n# tables"));
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), commented);

  const std::string only_tables = "# about features\n[features]\nx = 1";
  Write(Config(), only_tables);
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(Read(Config()).rfind("model_provider = \"contextd\"\n# about features\n", 0), 0u);
}

TEST_F(ConnectCodexTest, InvalidTomlIsRefusedAndNothingIsWritten) {
  const std::string bad = "model = \"a\"\n[features\nx = 1\n";
  Write(Config(), bad);
  EXPECT_EQ(Connect(), 2);
  EXPECT_THAT(err_.str(), HasSubstr(Config() + " is not valid TOML"));
  EXPECT_THAT(err_.str(), HasSubstr("nothing was changed"));
  EXPECT_EQ(Read(Config()), bad);
  EXPECT_FALSE(fs::exists(RecordFile()));
}

TEST_F(ConnectCodexTest, EntriesConnectCannotEditAreRefused) {
  for (const std::string& text : {
           std::string("mcp_servers = { contextd = { url = \"http://x/mcp\" } }\n"),
           std::string("[mcp_servers]\ncontextd.url = \"http://x/mcp\"\n"),
           std::string("[model_providers]\ncontextd = { name = \"x\" }\n"),
       }) {
    Write(Config(), text);
    EXPECT_EQ(Connect(), 2) << text;
    EXPECT_THAT(err_.str(), HasSubstr("is defined in a form connect does not edit")) << text;
    EXPECT_EQ(Read(Config()), text);
  }
  // A table connect would add after an inline `mcp_servers = {...}` does not parse: refused too.
  const std::string inline_parent = "mcp_servers = { docs = { url = \"http://d\" } }\n";
  Write(Config(), inline_parent);
  EXPECT_EQ(Connect(), 2);
  EXPECT_THAT(err_.str(), HasSubstr("the edited file would not be valid TOML"));
  EXPECT_EQ(Read(Config()), inline_parent);
  EXPECT_FALSE(fs::exists(RecordFile()));
}

TEST_F(ConnectCodexTest, DryRunWritesNothing) {
  Write(Config(), kUsers);
  ConnectCommand c;
  c.dry_run = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("would connect Codex"));
  EXPECT_THAT(out_.str(), HasSubstr("dry run: nothing was written"));
  EXPECT_EQ(Read(Config()), kUsers);
  EXPECT_FALSE(fs::exists(RecordFile()));

  ASSERT_EQ(Connect(), 0);
  c.undo = true;
  ASSERT_EQ(Run(c), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("would restore"));
  EXPECT_NE(Read(Config()), kUsers);
  EXPECT_TRUE(fs::exists(RecordFile()));
}

TEST_F(ConnectCodexTest, UndoWithNothingToUndo) {
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("nothing to undo for Codex (" + Config() + ")"));
  EXPECT_FALSE(fs::exists(Config()));
}

TEST_F(ConnectCodexTest, UndoLeavesWhatChangedSinceConnect) {
  Write(Config(), kUsers);
  ASSERT_EQ(Connect(), 0) << err_.str();
  std::string text = Read(Config());
  size_t at = text.find("model_provider = \"contextd\"");
  text.replace(at, std::string("model_provider = \"contextd\"").size(),
               "model_provider = \"mine\"");
  Write(Config(), text);
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("model_provider changed since connect; left as it is"));
  std::string after = Read(Config());
  EXPECT_THAT(after, HasSubstr("model_provider = \"mine\"\n"));
  EXPECT_THAT(after, HasSubstr("url = \"http://old:1/mcp\""));
  EXPECT_THAT(after, Not(HasSubstr("[model_providers.contextd]")));
}

TEST_F(ConnectCodexTest, DefaultsToHomeDotCodexAndRefusesProject) {
  env_.codex_home.clear();
  auto file = ResolveCodexConfigFile(env_);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*file, root_ + "/home/.codex/config.toml");
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_EQ(Read(*file), kFresh);

  ConnectCommand c;
  c.project_dir = root_;
  EXPECT_EQ(Run(c), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--project does not apply to codex"));

  env_.home.clear();
  EXPECT_FALSE(ResolveCodexConfigFile(env_).ok());
}

TEST_F(ConnectCodexTest, KeepsTheModeAndFollowsSymlinks) {
  Write(root_ + "/dotfiles/codex.toml", "model = \"m\"\n");
  ::chmod((root_ + "/dotfiles/codex.toml").c_str(), 0640);
  fs::create_directories(root_ + "/codex");
  fs::create_symlink(root_ + "/dotfiles/codex.toml", Config());
  ASSERT_EQ(Connect(), 0) << err_.str();
  EXPECT_TRUE(fs::is_symlink(Config()));
  EXPECT_THAT(Read(root_ + "/dotfiles/codex.toml"), HasSubstr("[mcp_servers.contextd]"));
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/dotfiles/codex.toml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(Undo(), 0) << err_.str();
  EXPECT_EQ(Read(Config()), "model = \"m\"\n");
}

TEST(TomlStringTest, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(internal::TomlString("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
}

}  // namespace
}  // namespace contextd::cli
