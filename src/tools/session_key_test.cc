// Project ids from roots and headers (decision 0022).
#include "tools/session_key.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace contextd::tools {
namespace {

namespace fs = std::filesystem;

class ProjectIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/contextd-project-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = fs::canonical(pattern).string();
    fs::create_directories(dir_ + "/repo-a");
    fs::create_directories(dir_ + "/repo-b");
    fs::create_symlink(dir_ + "/repo-a", dir_ + "/link");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static protocol::Json Roots(const std::string& uri) {
    return protocol::Json::array({{{"uri", uri}, {"name", "x"}}});
  }

  std::string dir_;
};

TEST_F(ProjectIdTest, APathIsHashedToPAndSixteenHexDigitsWithItsCanonicalPathAsLabel) {
  ProjectRef a = ProjectForPath(dir_ + "/repo-a");
  EXPECT_EQ(a.label, dir_ + "/repo-a");
  ASSERT_EQ(a.id.size(), 18u);
  EXPECT_EQ(a.id.substr(0, 2), "p_");
  EXPECT_EQ(a.id.find_first_not_of("0123456789abcdef", 2), std::string::npos) << a.id;
  // Deterministic, and the same through a symlink, a trailing slash or a dot segment.
  EXPECT_EQ(ProjectForPath(dir_ + "/repo-a").id, a.id);
  EXPECT_EQ(ProjectForPath(dir_ + "/link").id, a.id);
  EXPECT_EQ(ProjectForPath(dir_ + "/repo-a/").id, a.id);
  EXPECT_EQ(ProjectForPath(dir_ + "/repo-b/../repo-a").id, a.id);
  // Two worktrees, two projects.
  EXPECT_NE(ProjectForPath(dir_ + "/repo-b").id, a.id);
  // A path that does not exist is normalized, not resolved.
  ProjectRef gone = ProjectForPath(dir_ + "/gone/./x/");
  EXPECT_EQ(gone.label, dir_ + "/gone/x");
}

TEST_F(ProjectIdTest, TheFirstFileRootNamesTheProject) {
  const std::string a = ProjectForPath(dir_ + "/repo-a").id;
  auto from_uri = ProjectFromRoots(Roots("file://" + dir_ + "/repo-a"));
  ASSERT_TRUE(from_uri.ok()) << from_uri.status();
  EXPECT_EQ(from_uri->id, a);
  EXPECT_EQ(ProjectFromRoots(Roots("file://localhost" + dir_ + "/link"))->id, a);
  // Percent-encoded, as pathToFileURL writes a space.
  fs::create_directories(dir_ + "/with space");
  EXPECT_EQ(ProjectFromRoots(Roots("file://" + dir_ + "/with%20space"))->label,
            dir_ + "/with space");
  // Only the first root counts.
  protocol::Json two = Roots("file://" + dir_ + "/repo-b");
  two.push_back({{"uri", "file://" + dir_ + "/repo-a"}});
  EXPECT_EQ(ProjectFromRoots(two)->id, ProjectForPath(dir_ + "/repo-b").id);
  // Not a local path: no project from roots.
  EXPECT_FALSE(ProjectFromRoots(Roots("https://example.com/repo")).ok());
  EXPECT_FALSE(ProjectFromRoots(Roots("file://otherhost/srv/repo")).ok());
  EXPECT_FALSE(ProjectFromRoots(protocol::Json::array()).ok());
  EXPECT_FALSE(ProjectFromRoots(nullptr).ok());
  EXPECT_FALSE(ProjectFromRoots(protocol::Json::array({{{"name", "no uri"}}})).ok());
}

TEST_F(ProjectIdTest, AHeaderIsAPathHashedLikeARootOrAnExplicitId) {
  EXPECT_EQ(ProjectFromHeader(dir_ + "/link")->id, ProjectForPath(dir_ + "/repo-a").id);
  auto explicit_id = ProjectFromHeader("team-board.v2");
  ASSERT_TRUE(explicit_id.ok());
  EXPECT_EQ(explicit_id->id, "team-board.v2");
  EXPECT_EQ(ProjectFromHeader("with space").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ProjectFromHeader("").ok());
  EXPECT_FALSE(ProjectFromHeader(std::string(129, 'a')).ok());
  EXPECT_FALSE(ProjectFromHeader("/tmp/a\nb").ok());
}

TEST_F(ProjectIdTest, RootsWinOverTheHeaderWhichWinsOverDefault) {
  protocol::SessionInfo info;
  info.project_header = "explicit";
  ResolveSessionProject(Roots("file://" + dir_ + "/repo-b"), info);
  EXPECT_EQ(info.project, ProjectForPath(dir_ + "/repo-b").id);
  EXPECT_EQ(info.project_label, dir_ + "/repo-b");
  ResolveSessionProject(nullptr, info);
  EXPECT_EQ(info.project, "explicit");
  info.project_header.clear();
  ResolveSessionProject(Roots("https://not.a/path"), info);
  EXPECT_EQ(info.project, "default");
  EXPECT_EQ(info.project_label, "");
}

TEST(SessionKeyForTest, TheProjectIsDefaultUntilFixed) {
  protocol::SessionInfo info;
  info.session_id = "s";
  info.tenant = "";
  EXPECT_EQ(SessionKeyFor(info).project, "default");
  EXPECT_EQ(SessionKeyFor(info).tenant, "local");
  info.project = "p_0123456789abcdef";
  EXPECT_EQ(SessionKeyFor(info).project, "p_0123456789abcdef");
}

}  // namespace
}  // namespace contextd::tools
