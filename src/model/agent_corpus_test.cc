// The request bodies real agents sent in the long sessions of tests/agents (tests/agents/corpus:
// Claude Code 2.1.332 and OpenCode 1.18.33, scrubbed), through the fold core and the context
// manager: the returned branches a body carries fold (the one whose return it carries at least),
// the rewrite keeps the transcript valid, and a second request repeats the first's bytes. The
// next client release's shapes are one recording away.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/anthropic_request.h"
#include "model/context_manager.h"
#include "model/fold.h"
#include "model/testing/fake_branch_ledger.h"
#include "model/testing/fuzz_support.h"
#include "model/testing/in_memory_conversation_store.h"

namespace contextd::model {
namespace {

std::vector<std::filesystem::path> CorpusFiles() {
  std::vector<std::filesystem::path> files;
  const char* source = std::getenv("CONTEXTD_SOURCE_DIR");
  if (source == nullptr) return files;
  std::filesystem::path root = std::filesystem::path(source) / "tests/agents/corpus";
  if (!std::filesystem::is_directory(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(AgentCorpusTest, RecordedBodiesFoldValidlyAndRepeat) {
  std::vector<std::filesystem::path> files = CorpusFiles();
  if (files.empty()) GTEST_SKIP() << "tests/agents/corpus is not here";
  int folded_bodies = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    const std::string body = Read(path);
    auto request = AnthropicRequest::Parse(body);
    ASSERT_TRUE(request.ok()) << request.status();
    (*request)->ComputeKeys();
    ASSERT_TRUE(ValidateTranscript((*request)->transcript()).ok());
    BranchLookup lookup = testing::EndedBranchLookup(false);
    FoldPlan plan = PlanFolds((*request)->transcript(), {}, lookup);
    // A body recorded where a return arrives folds that branch; none is skipped for what the
    // client put around it (only for returns the model already answered in that session).
    for (const FoldSkip& skip : plan.skipped) EXPECT_EQ(skip.reason, SkipReason::kAnswered);
    if (path.filename().string().starts_with("long-client-return") ||
        path.filename().string().starts_with("long-client-budget")) {
      EXPECT_FALSE(plan.edits.empty());
    }
    folded_bodies += !plan.edits.empty();
    RenderPlan render;
    render.folds = plan.edits;
    EXPECT_TRUE(ValidateTranscript((*request)->RenderedTranscript(render)).ok());

    testing::InMemoryConversationStore store;
    testing::SevenScrubber scrubber;
    testing::QuarterByteCounter counter;
    model::testing::FakeBranchLedger ledger(
        [&](const std::string&, const std::string& id) { return lookup(id); });
    ContextManager manager({}, store, scrubber, counter, &ledger);
    std::string first;
    for (int round = 0; round < 2; ++round) {
      auto fresh = AnthropicRequest::Parse(body);
      ASSERT_TRUE(fresh.ok());
      auto applied =
          manager.Apply("local", "corpus", std::shared_ptr<AnthropicRequest>(*std::move(fresh)), 1);
      ASSERT_TRUE(applied.ok()) << applied.status();
      EXPECT_FALSE(applied->fallback);
      auto forwarded = AnthropicRequest::Parse(applied->body);
      ASSERT_TRUE(forwarded.ok());
      EXPECT_TRUE(ValidateTranscript((*forwarded)->transcript()).ok());
      if (round == 0) first = applied->body;
      if (round == 1) {
        EXPECT_EQ(applied->body, first);
      }
    }
  }
  EXPECT_GT(folded_bodies, 0);
}

}  // namespace
}  // namespace contextd::model
