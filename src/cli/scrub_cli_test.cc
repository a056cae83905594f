#include "cli/scrub_cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace contextd::cli {
namespace {

TEST(ScrubCliTest, RedactsStdin) {
  std::istringstream in("a=1\ntoken ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5\n");
  std::ostringstream out, err;
  EXPECT_EQ(RunScrubCommand("", false, false, in, out, err), 0);
  EXPECT_EQ(out.str(), "a=1\ntoken [REDACTED:github-pat:ghp_]\n");
  EXPECT_EQ(err.str(), "");
}

TEST(ScrubCliTest, ReportJson) {
  std::istringstream in("a=1\ntoken ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5\n");
  std::ostringstream out, err;
  EXPECT_EQ(RunScrubCommand("", false, true, in, out, err), 0);
  auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["rule_id"], "github-pat");
  EXPECT_EQ(j["findings"][0]["start"], 10);
  EXPECT_EQ(j["findings"][0]["end"], 50);
  EXPECT_EQ(j["findings"][0]["line"], 2);
  EXPECT_GT(j["findings"][0]["entropy"].get<double>(), 4.0);
  EXPECT_EQ(j["redacted_bytes"], 40);
}

TEST(ScrubCliTest, BadRulesFileExits2) {
  std::istringstream in("x");
  std::ostringstream out, err;
  EXPECT_EQ(RunScrubCommand("/nonexistent.toml", false, false, in, out, err), 2);
  EXPECT_NE(err.str().find("/nonexistent.toml"), std::string::npos);
  EXPECT_EQ(out.str(), "");
}

TEST(ScrubCliTest, CustomRulesAndCompileWarnings) {
  auto path = std::filesystem::temp_directory_path() /
              ("scrub_cli_rules_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << "[[rules]]\nid='bad'\nregex='''a(?=b)'''\nkeywords=['a']\n"
                         "[[rules]]\nid='mine'\nregex='''MINE[0-9]{8}'''\nkeywords=['mine']\n";
  std::istringstream in("MINE12345678");
  std::ostringstream out, err;
  EXPECT_EQ(RunScrubCommand(path.string(), false, false, in, out, err), 0);
  EXPECT_EQ(out.str(), "[REDACTED:mine:MIN]");
  EXPECT_NE(err.str().find("rule bad"), std::string::npos) << err.str();
  std::filesystem::remove(path);
}

// --rules FILE alone: the file's rules replace the built-in ones (gitleaks semantics);
// --with-defaults (or [extend] useDefault = true in the file) keeps the built-in rules too.
TEST(ScrubCliTest, RulesFileReplacesBuiltInsUnlessWithDefaults) {
  auto path = std::filesystem::temp_directory_path() /
              ("scrub_cli_replace_" + std::to_string(::getpid()) + ".toml");
  const std::string text = "MINE12345678 ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5";
  auto run = [&](const std::string& toml, bool with_defaults) {
    std::ofstream(path) << toml;
    std::istringstream in(text);
    std::ostringstream out, err;
    EXPECT_EQ(RunScrubCommand(path.string(), with_defaults, false, in, out, err), 0) << err.str();
    return out.str();
  };
  const std::string mine = "[[rules]]\nid='mine'\nregex='''MINE[0-9]{8}'''\nkeywords=['mine']\n";
  EXPECT_EQ(run(mine, false), "[REDACTED:mine:MIN] ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5");
  EXPECT_EQ(run(mine, true), "[REDACTED:mine:MIN] [REDACTED:github-pat:ghp_]");
  EXPECT_EQ(run("[extend]\nuseDefault = true\n" + mine, false),
            "[REDACTED:mine:MIN] [REDACTED:github-pat:ghp_]");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace contextd::cli
