#include "scrub/originals_archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace contextd::scrub {
namespace {

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("scrub_archive_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    key_file_ = (dir_ / "key").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string key_file_;
};

TEST_F(ArchiveTest, KeyFileMustBe0600) {
  ASSERT_TRUE(CreateArchiveKeyFile(key_file_).ok());
  struct stat st;
  ASSERT_EQ(::stat(key_file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(LoadArchiveKey(key_file_).ok());
  EXPECT_EQ(CreateArchiveKeyFile(key_file_).code(), absl::StatusCode::kAlreadyExists);
  ::chmod(key_file_.c_str(), 0640);
  auto k = LoadArchiveKey(key_file_);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(k.status().message().find("0640"), std::string::npos) << k.status();
  EXPECT_EQ(LoadArchiveKey((dir_ / "none").string()).status().code(), absl::StatusCode::kNotFound);
  std::string bad = (dir_ / "bad").string();
  std::ofstream(bad) << "short";
  ::chmod(bad.c_str(), 0600);
  EXPECT_EQ(LoadArchiveKey(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ArchiveTest, SealOpenRoundTripAndTamper) {
  ASSERT_TRUE(CreateArchiveKeyFile(key_file_).ok());
  auto key = LoadArchiveKey(key_file_);
  ASSERT_TRUE(key.ok());
  std::string sealed = SealOriginal(*key, "top secret ghp_x", "id1");
  EXPECT_EQ(sealed.find("top secret"), std::string::npos);
  auto opened = OpenOriginal(*key, sealed, "id1");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, "top secret ghp_x");
  EXPECT_EQ(OpenOriginal(*key, sealed, "id2").status().code(), absl::StatusCode::kDataLoss);
  sealed[30] ^= 1;
  EXPECT_EQ(OpenOriginal(*key, sealed, "id1").status().code(), absl::StatusCode::kDataLoss);
  ArchiveKey other;
  other.bytes.fill(7);
  EXPECT_FALSE(OpenOriginal(other, SealOriginal(*key, "x", ""), "").ok());
  EXPECT_FALSE(OpenOriginal(*key, "short", "").ok());
}

TEST_F(ArchiveTest, ArchivingScrubberStoresAndRevealsOriginal) {
  ASSERT_TRUE(CreateArchiveKeyFile(key_file_).ok());
  auto key = LoadArchiveKey(key_file_);
  ASSERT_TRUE(key.ok());
  auto rules = BuildScrubber(ScrubConfig{});
  ASSERT_TRUE(rules.ok());
  auto store = FileOriginalsArchive::Open((dir_ / "originals").string());
  ASSERT_TRUE(store.ok());
  std::shared_ptr<OriginalsArchive> archive(std::move(*store));
  ArchivingScrubber s(*rules, *key, archive);
  std::string original = "token ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 here";
  auto r = s.ScrubAndArchive(original);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->text, "token [REDACTED:github-pat:ghp_] here");
  ASSERT_FALSE(r->archive_id.empty());
  // Nothing readable on disk.
  auto sealed = archive->Get(r->archive_id);
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(sealed->find("ghp_"), std::string::npos);
  auto revealed = RevealOriginal(*archive, key_file_, r->archive_id);
  ASSERT_TRUE(revealed.ok()) << revealed.status();
  EXPECT_EQ(*revealed, original);
  // Clean text is not archived.
  auto clean = s.ScrubAndArchive("nothing secret");
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->archive_id.empty());
  EXPECT_EQ(s.Scrub("x ghp_bB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"), "x [REDACTED:github-pat:ghp_]");
  auto ids = archive->List();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_EQ(s.archive_failures(), 0u);
  EXPECT_EQ(archive->Get("../etc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(archive->Get("abcd").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ArchiveTest, PrivateSpansAreNeverArchived) {
  ASSERT_TRUE(CreateArchiveKeyFile(key_file_).ok());
  auto key = LoadArchiveKey(key_file_);
  ASSERT_TRUE(key.ok());
  auto rules = BuildScrubber(ScrubConfig{});
  ASSERT_TRUE(rules.ok());
  auto store = FileOriginalsArchive::Open((dir_ / "originals").string());
  ASSERT_TRUE(store.ok());
  std::shared_ptr<OriginalsArchive> archive(std::move(*store));
  ArchivingScrubber s(*rules, *key, archive);

  // A secret inside a private span: redacted in what is returned, but no original is kept.
  std::string inside = "mine: <private>ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 note</private>";
  auto r = s.ScrubAndArchive(inside);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->text, "mine: <private>[REDACTED:github-pat:ghp_] note</private>");
  EXPECT_TRUE(r->archive_id.empty());
  EXPECT_EQ(s.Scrub("<PRIVATE>x ghp_cB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"),
            "<PRIVATE>x [REDACTED:github-pat:ghp_]");
  auto ids = archive->List();
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->empty());

  // A secret outside, private text beside it: the original is kept with the span withheld.
  std::string beside =
      "token ghp_dB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 <private>PRIVATE-NOTE-42</private>";
  auto b = s.ScrubAndArchive(beside);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->text, "token [REDACTED:github-pat:ghp_] <private>PRIVATE-NOTE-42</private>");
  ASSERT_FALSE(b->archive_id.empty());
  auto revealed = RevealOriginal(*archive, key_file_, b->archive_id);
  ASSERT_TRUE(revealed.ok()) << revealed.status();
  EXPECT_EQ(*revealed,
            "token ghp_dB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 <private>[withheld]</private>");
  EXPECT_EQ(s.archive_failures(), 0u);
}

}  // namespace
}  // namespace contextd::scrub
