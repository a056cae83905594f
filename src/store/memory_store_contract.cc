// The ReasoningBank over every real store (SQLite file, PostgreSQL database): the store's rows,
// history, stems and term statistics, and the bank's confidence, visibility, ranking (own
// project first, floors), extraction and merging on top of it. Instantiated by each backend's
// test binary.
#include "store/memory_store_contract.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory/memory_bank.h"

namespace contextd::store::testing {
namespace {

using memory::Caller;
using memory::MemoryBank;
using memory::MemoryItem;
using memory::Outcome;
using memory::RecordRequest;
using memory::Scope;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_P(MemoryBankTest, RecordStoresScrubbedItemWithHistory) {
  MemoryItem item = Record(alice_, "Find flaky tests with pytest -p no:randomly",
                           "Run pytest with -p no:randomly and key sk-SECRET to fix the order.");
  EXPECT_THAT(item.id, ::testing::StartsWith("mem_"));
  EXPECT_THAT(item.content, Not(HasSubstr("sk-SECRET")));
  auto stored = store_->Get(item.id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->content, item.content);
  EXPECT_EQ((*stored)->status, memory::Status::kActive);
  EXPECT_DOUBLE_EQ((*stored)->Confidence(), 0.75);
  auto history = store_->History(item.id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].action, "recorded");
  EXPECT_EQ(events_, std::vector<std::string>{"memory.recorded"});
}

TEST_P(MemoryBankTest, BadFieldsAreRefusedNamingTheField) {
  RecordRequest r;
  r.title = "";
  r.description = "d";
  r.content = "c";
  auto item = bank_->Record(alice_, r);
  ASSERT_FALSE(item.ok());
  EXPECT_EQ(item.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(item.status().message(), HasSubstr("title"));
  r.title = "t";
  r.content = std::string(memory::kMaxContentChars + 1, 'x');
  item = bank_->Record(alice_, r);
  ASSERT_FALSE(item.ok());
  EXPECT_THAT(item.status().message(), HasSubstr("content"));
  EXPECT_TRUE(store_->List(memory::ListFilter{})->empty());
}

TEST_P(MemoryBankTest, SearchRanksByTextAndTaskAndRespectsVisibility) {
  MemoryItem migrations = Record(alice_, "Django migrations conflict",
                                 "Run makemigrations --merge when two migration leaves exist.");
  Record(alice_, "Sympy printing", "Use the StrPrinter subclass to change how Pow prints.");
  Record(Caller{"acme", "other-project", "s"}, "Django migrations in other project",
         "Project-scoped: invisible from web.");
  MemoryItem team = Record(Caller{"acme", "other-project", "s"}, "Django migrations team tip",
                           "Squash old migrations before upgrading.", Scope::kTeam);
  Record(Caller{"globex", "web", "s"}, "Django migrations globex",
         "Another tenant's project memory.", Scope::kTeam);
  auto hits = bank_->Search(alice_, "fix the django migrations conflict", 10, std::nullopt);
  ASSERT_TRUE(hits.ok()) << hits.status();
  std::vector<std::string> ids;
  for (const auto& h : *hits) ids.push_back(h.item.id);
  EXPECT_THAT(ids, ::testing::UnorderedElementsAre(migrations.id, team.id));
  EXPECT_EQ(ids[0], migrations.id);  // "conflict" only matches it

  auto only_team = bank_->Search(alice_, "django migrations", 10, Scope::kTeam);
  ASSERT_TRUE(only_team.ok());
  ASSERT_EQ(only_team->size(), 1u);
  EXPECT_EQ((*only_team)[0].item.id, team.id);

  // Another tenant cannot see, rate or retire them: the same NotFound as a missing id.
  Caller mallory{"globex", "web", "x"};
  auto fb = bank_->Feedback(mallory, migrations.id, false);
  EXPECT_EQ(fb.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bank_->Feedback(mallory, "mem_missing", false).status().message(),
            "memory mem_missing not found");

  EXPECT_EQ(bank_->Search(alice_, "  ", 5, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bank_->Search(alice_, "x", 0, std::nullopt).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(MemoryBankTest, TaskTextRankingFindsItemsWhoseWordsDiffer) {
  // The item's own text shares no word with the query; its source task does.
  MemoryItem item =
      Record(alice_, "Pin the resolver", "Set the lockfile before installing.", Scope::kProject,
             Outcome::kSuccess, "dependency installation breaks on CI runners");
  auto hits =
      bank_->Search(alice_, "CI runners break during dependency installation", 5, std::nullopt);
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].item.id, item.id);
}

TEST_P(MemoryBankTest, ConfidenceFollowsFeedbackAndOutcomes) {
  MemoryItem item = Record(alice_, "Cache the vocabulary", "Load it off the executor.");
  auto after = bank_->Feedback(alice_, item.id, false);
  ASSERT_TRUE(after.ok());
  EXPECT_DOUBLE_EQ(after->Confidence(), 3.0 / 5.0);
  // Below 0.7: searchable, not injected.
  auto injected = bank_->Retrieve(alice_, "cache vocabulary executor");
  ASSERT_TRUE(injected.ok());
  EXPECT_TRUE(injected->empty());
  EXPECT_EQ(bank_->Search(alice_, "cache vocabulary", 5, std::nullopt)->size(), 1u);
  ASSERT_TRUE(bank_->RecordOutcome(alice_, item.id, true).ok());
  after = bank_->Feedback(alice_, item.id, true);
  ASSERT_TRUE(after.ok());
  EXPECT_DOUBLE_EQ(after->Confidence(), 5.0 / 7.0);
  injected = bank_->Retrieve(alice_, "cache vocabulary executor");
  ASSERT_TRUE(injected.ok());
  ASSERT_EQ(injected->size(), 1u);
  EXPECT_EQ((*injected)[0].text, "[worked] Cache the vocabulary: Load it off the executor.");
  EXPECT_GT((*injected)[0].tokens, 0);
  auto history = store_->History(item.id);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 4u);  // recorded, feedback, outcome, feedback
}

TEST_P(MemoryBankTest, RetrieveRanksTheOwnProjectFirstThenOtherProjectsByRelevance) {
  // No floors here: the order is what this test is about.
  MakeBank(memory::BankOptions{
      .injection_floor = 0, .other_project_floor = 0, .org_across_tenants = true});
  MemoryItem org = Record(Caller{"globex", "x", "s"}, "Retry flaky network fetches",
                          "Retry with backoff on network fetch errors.", Scope::kOrg);
  MemoryItem team = Record(Caller{"acme", "api", "s"}, "Flaky fetches in tests",
                           "Mock the network in unit tests.", Scope::kTeam);
  MemoryItem project = Record(alice_, "Flaky fetch", "The CDN fetch needs a timeout.");
  auto got = bank_->Retrieve(alice_, "retry flaky network fetch errors with backoff");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].item.id, project.id);
  EXPECT_TRUE((*got)[0].own_project);
  // The others by relevance, whatever their scope: the org item holds more of the query.
  EXPECT_EQ((*got)[1].item.id, org.id);
  EXPECT_EQ((*got)[2].item.id, team.id);
  EXPECT_FALSE((*got)[1].own_project);
  EXPECT_GT((*got)[1].score, (*got)[2].score);
  ASSERT_TRUE(bank_->NoteInjected(alice_, "br_1", {project.id, org.id}, 40).ok());
  EXPECT_EQ((*store_->Get(project.id))->use_count, 1);
  EXPECT_EQ(events_.back(), "memory.injected");
}

TEST_P(MemoryBankTest, OwnProjectBeatsABetterMatchElsewhereUnlessBelowTheInjectionFloor) {
  const std::string query = "retry flaky network fetch errors with backoff";
  MemoryItem theirs = Record(Caller{"acme", "api", "s"}, "Retry flaky network fetches",
                             "Retry with backoff on network fetch errors.", Scope::kTeam);
  MemoryItem ours = Record(alice_, "Flaky fetch", "The CDN fetch needs a timeout.");
  MakeBank(memory::BankOptions{.injection_floor = 0, .other_project_floor = 0});
  auto got = bank_->Retrieve(alice_, query);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].item.id, ours.id);
  EXPECT_EQ((*got)[1].item.id, theirs.id);
  const double our_score = (*got)[0].score, their_score = (*got)[1].score;
  EXPECT_GT(their_score, our_score);  // theirs matches better, ours still comes first
  // Other projects only from their floor up.
  MakeBank(memory::BankOptions{.injection_floor = 0, .other_project_floor = their_score + 0.01});
  got = bank_->Retrieve(alice_, query);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].item.id, ours.id);
  // Below the injection floor, the own project's item is not injected at all.
  MakeBank(memory::BankOptions{.injection_floor = (our_score + their_score) / 2,
                               .other_project_floor = 0});
  got = bank_->Retrieve(alice_, query);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].item.id, theirs.id);
}

TEST_P(MemoryBankTest, TheFloorInjectsNothingForAnUnrelatedQuery) {
  Record(alice_, "Stop pytest at the first failure", "Run pytest -x to stop early.");
  Record(alice_, "Merge migration leaves", "Run makemigrations --merge when two leaves exist.");
  // Another project knows the query's words: they are not noise, the web project lacks them.
  Record(Caller{"acme", "billing", "s"}, "Deploy the billing service",
         "The deployment script needs the billing service's token.");
  const std::string unrelated = "run the deployment script for the billing service";
  MakeBank(memory::BankOptions{.injection_floor = 0});
  auto got = bank_->Retrieve(alice_, unrelated);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 2u);  // both hold "run": without a floor, both are injected
  MakeBank({});
  got = bank_->Retrieve(alice_, unrelated);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty()) << (*got)[0].item.title << " " << (*got)[0].score;
  got = bank_->Retrieve(alice_, "pytest stops at the first failure");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].item.title, "Stop pytest at the first failure");
}

TEST_P(MemoryBankTest, StemsMatchCachingCachedAndCache) {
  MemoryItem item = Record(alice_, "Caching the tokenizer", "Cached vocabularies load once.");
  for (const char* query : {"cache", "caching", "cached vocabulary", "caches"}) {
    auto hits = bank_->Search(alice_, query, 5, std::nullopt);
    ASSERT_TRUE(hits.ok()) << hits.status();
    ASSERT_EQ(hits->size(), 1u) << query;
    EXPECT_EQ((*hits)[0].item.id, item.id);
  }
  auto found = store_->FindMatches({"acme", "web", std::nullopt, false}, {"cach"}, 5);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->global.terms["cach"].content, 1);
  EXPECT_EQ((found->projects[{"acme", "web"}].terms["cach"].content), 1);
  EXPECT_EQ((found->projects[{"acme", "web"}].items), 1);
}

TEST_P(MemoryBankTest, TermStatisticsArePerProjectAndGlobal) {
  Record(alice_, "Walrus one", "walrus");
  Record(alice_, "Walrus two", "walrus");
  MemoryItem other = Record(Caller{"acme", "api", "s"}, "Walrus three", "walrus", Scope::kTeam);
  Record(Caller{"globex", "web", "s"}, "Walrus four", "walrus");
  auto found = store_->FindMatches({"acme", "web", std::nullopt, false}, {"walrus"}, 10);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->items.size(), 3u);  // globex's is invisible
  EXPECT_EQ(found->global.terms["walrus"].content, 4);
  EXPECT_EQ(found->global.items, 4);
  EXPECT_EQ((found->projects[{"acme", "web"}].terms["walrus"].content), 2);
  EXPECT_EQ((found->projects[{"acme", "api"}].terms["walrus"].content), 1);
  EXPECT_EQ(found->projects.count({"globex", "web"}), 0u);
  // An edit moves the counts with the words.
  other.content = "narwhal";
  other.title = "Narwhal";
  other.description = "narwhal";
  ASSERT_TRUE(store_->Update(other, {}).ok());
  found = store_->FindMatches({"acme", "web", std::nullopt, false}, {"walrus", "narwhal"}, 10);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->global.terms["walrus"].content, 3);
  EXPECT_EQ((found->projects[{"acme", "api"}].terms["narwhal"].content), 1);
  EXPECT_EQ((found->projects[{"acme", "api"}].terms.count("walrus")), 1u);
  EXPECT_EQ((found->projects[{"acme", "api"}].terms["walrus"].content), 0);
}

TEST_P(MemoryBankTest, OrgItemsStayWithTheirTenantUnlessTheDeploymentSharesThem) {
  // Default options but the floors (visibility is what this test is about): another tenant's org
  // item is as invisible as its project items.
  MakeBank(memory::BankOptions{.injection_floor = 0, .other_project_floor = 0});
  MemoryItem theirs = Record(Caller{"globex", "x", "s"}, "Retry flaky network fetches",
                             "Retry with backoff on network fetch errors.", Scope::kOrg);
  MemoryItem ours = Record(Caller{"acme", "other-project", "s"}, "Retry flaky network calls",
                           "Retry with backoff on network errors, then give up.", Scope::kOrg);
  const std::string query = "retry flaky network fetch errors with backoff";
  auto got = bank_->Retrieve(alice_, query);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].item.id, ours.id);
  auto found = bank_->Search(alice_, query, 10, std::nullopt);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].item.id, ours.id);
  EXPECT_FALSE(bank_->Feedback(alice_, theirs.id, true).ok());  // "not found", as a missing id
  // Shared by the deployment: both reach alice.
  MakeBank(memory::BankOptions{
      .injection_floor = 0, .other_project_floor = 0, .org_across_tenants = true});
  got = bank_->Retrieve(alice_, query);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 2u);
}

TEST_P(MemoryBankTest, ExtractStructuralCandidatesPendingUntilConfirmedAndMergesDuplicates) {
  memory::BranchTrace trace;
  trace.tenant = "acme";
  trace.project = "web";
  trace.branch_id = "br_0123456789abcdef0123456789abcdef";
  trace.description = "Find where the session cookie is parsed";
  trace.prompt = "Search the code for the cookie parser";
  trace.summary = "The cookie is parsed in src/http/cookies.py by parse_cookie(). It trims quotes.";
  trace.events = {
      {"tool_call", "bash", R"({"command":"grep -rn parse_cookie src/"})", false},
      {"tool_result", "bash", "src/http/cookies.py:12:def parse_cookie(raw):", false},
      {"tool_call", "bash", R"({"command":"python -m pytest tests/test_cookies.py"})", false},
      {"tool_result", "bash", "E   AssertionError: expected 'a' got '\"a\"'\nFAILED", true},
  };
  auto first = bank_->Extract(trace, Scope::kProject);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->distiller, "structural");
  ASSERT_EQ(first->stored.size(), 2u);  // the way, and the pitfall met on it
  const MemoryItem& way = first->stored[0];
  EXPECT_EQ(way.status, memory::Status::kPending);
  EXPECT_EQ(way.outcome, Outcome::kSuccess);
  EXPECT_THAT(way.content, HasSubstr("parse_cookie"));
  EXPECT_THAT(way.content, HasSubstr("grep -rn parse_cookie src/"));
  EXPECT_EQ(way.source.branch_id, trace.branch_id);
  EXPECT_EQ(first->stored[1].outcome, Outcome::kFailure);
  EXPECT_THAT(first->stored[1].content, HasSubstr("AssertionError"));
  // Pending: searchable, not injected.
  EXPECT_TRUE(bank_->Retrieve(alice_, "where is the session cookie parsed")->empty());
  EXPECT_FALSE(bank_->Search(alice_, "session cookie parsed", 5, std::nullopt)->empty());
  auto confirmed = bank_->RecordOutcome(alice_, way.id, true);
  ASSERT_TRUE(confirmed.ok());
  EXPECT_EQ(confirmed->status, memory::Status::kActive);
  EXPECT_EQ(bank_->Retrieve(alice_, "where is the session cookie parsed")->size(), 1u);

  // The same task again: both candidates merge into the existing items.
  trace.branch_id = "br_ffffffffffffffffffffffffffffffff";
  auto second = bank_->Extract(trace, Scope::kProject);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->stored.empty());
  EXPECT_EQ(second->merged.size(), 2u);
  auto history = store_->History(way.id);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->back().action, "merged");
}

TEST_P(MemoryBankTest, ForceReturnedBranchBecomesWhatToAvoid) {
  MakeBank(memory::BankOptions{.auto_confirm = true});
  memory::BranchTrace trace;
  trace.tenant = "acme";
  trace.project = "web";
  trace.branch_id = "br_1";
  trace.description = "Read every log file";
  trace.prompt = "cat all logs";
  trace.summary = "partial";
  trace.succeeded = false;
  trace.finish_reason = "budget exhausted: 8192/8192 tokens";
  trace.events = {{"tool_call", "read_file", R"({"path":"/var/log/app.log"})", false}};
  auto result = bank_->Extract(trace, Scope::kProject);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->stored.size(), 1u);
  const MemoryItem& item = result->stored[0];
  EXPECT_EQ(item.outcome, Outcome::kFailure);
  EXPECT_EQ(item.status, memory::Status::kActive);
  EXPECT_THAT(item.content, HasSubstr("budget exhausted"));
  EXPECT_THAT(item.content, HasSubstr("/var/log/app.log"));
  auto injected = bank_->Retrieve(alice_, "read the log files");
  ASSERT_TRUE(injected.ok());
  ASSERT_EQ(injected->size(), 1u);
  EXPECT_THAT((*injected)[0].text, ::testing::StartsWith("[avoid] Avoid: Read every log file"));
}

TEST_P(MemoryBankTest, RetireKeepsTheItemAndItsHistory) {
  MemoryItem item = Record(alice_, "Old advice", "Use the old API.");
  auto retired = bank_->Retire(alice_, item.id, "API removed");
  ASSERT_TRUE(retired.ok());
  EXPECT_EQ(retired->status, memory::Status::kRetired);
  EXPECT_TRUE(bank_->Search(alice_, "old advice API", 5, std::nullopt)->empty());
  EXPECT_EQ(bank_->Feedback(alice_, item.id, true).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto history = store_->History(item.id);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->back().action, "retired");
  EXPECT_EQ(history->back().detail, "API removed");
}

TEST_P(MemoryBankTest, ImportKeepsIdsAndRefusesDuplicates) {
  MemoryItem item = Record(alice_, "Shared tip", "Share the bank as JSONL.");
  auto listed = store_->List(memory::ListFilter{});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  std::unique_ptr<StoreBackend> other = GetParam().make();  // another, empty database
  auto store2 = other->OpenMemoryStore();
  ASSERT_TRUE(store2.ok()) << store2.status();
  MemoryBank::Parts parts;
  parts.store = store2->get();
  parts.clock = &clock_;
  parts.sanitize = [](std::string_view t) { return std::string(t); };
  parts.count_tokens = [](std::string_view t) { return static_cast<int64_t>(t.size()); };
  MemoryBank bank2(std::move(parts), {});
  ASSERT_TRUE(bank2.Import((*listed)[0], "cli").ok());
  EXPECT_EQ(bank2.Import((*listed)[0], "cli").code(), absl::StatusCode::kAlreadyExists);
  auto copy = (*store2)->Get(item.id);
  ASSERT_TRUE(copy.ok() && copy->has_value());
  EXPECT_EQ((*copy)->content, item.content);
  EXPECT_EQ(bank2.Search(alice_, "shared tip", 5, std::nullopt)->size(), 1u);
}

TEST_P(MemoryBankTest, EditedTextsAreSearchedByTheirNewWordsOnly) {
  MemoryItem item = Record(alice_, "Zeppelin parser", "Ostrich tokens are skipped.");
  item.content = "Walrus tokens are skipped.";
  ASSERT_TRUE(store_->Update(item, {}).ok());
  EXPECT_TRUE(bank_->Search(alice_, "ostrich", 5, std::nullopt)->empty());
  EXPECT_EQ(bank_->Search(alice_, "walrus", 5, std::nullopt)->size(), 1u);
  EXPECT_EQ(bank_->Search(alice_, "zeppelin", 5, std::nullopt)->size(), 1u);
}

// Records what it is asked to embed; every text gets the same vector.
class RecordingEmbedder final : public memory::Embedder {
 public:
  absl::StatusOr<std::vector<std::vector<float>>> Embed(
      const std::vector<std::string>& texts) override {
    seen.insert(seen.end(), texts.begin(), texts.end());
    return std::vector<std::vector<float>>(texts.size(), std::vector<float>{1.0F, 0.0F});
  }
  std::string model() const override { return "recording"; }
  std::vector<std::string> seen;
};

// One nearest neighbour: whatever was added last.
class LastVectorIndex final : public memory::VectorIndex {
 public:
  absl::Status Add(std::string_view id, const std::vector<float>&) override {
    last = std::string(id);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<memory::Neighbour>> Nearest(const std::vector<float>&,
                                                         int) const override {
    return std::vector<memory::Neighbour>{{last, 0.0F}};
  }
  size_t size() const override { return last.empty() ? 0 : 1; }
  size_t memory_bytes() const override { return 0; }
  std::string last;
};

TEST_P(MemoryBankTest, TextsSentToTheEmbedderAreScrubbed) {
  RecordingEmbedder embedder;
  LastVectorIndex vectors;
  MemoryBank::Parts parts;
  parts.store = store_.get();
  parts.clock = &clock_;
  parts.sanitize = [](std::string_view text) {
    return absl::StrReplaceAll(absl::string_view(text.data(), text.size()),
                               {{"sk-SECRET", "[REDACTED:key]"}});
  };
  parts.count_tokens = [](std::string_view text) { return static_cast<int64_t>(text.size()); };
  parts.embedder = &embedder;
  parts.vectors = &vectors;
  MemoryBank bank(std::move(parts), {});
  RecordRequest r;
  r.title = "Rotate sk-SECRET keys";
  r.description = "When a key leaks.";
  r.content = "Revoke it first.";
  ASSERT_TRUE(bank.Record(alice_, r).ok());
  auto hits = bank.Search(alice_, "what to do with sk-SECRET now", 5, std::nullopt);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(embedder.seen.size(), 2u);  // the item, then the query
  for (const std::string& text : embedder.seen) {
    EXPECT_THAT(text, Not(HasSubstr("sk-SECRET")));
    EXPECT_THAT(text, HasSubstr("[REDACTED:key]"));
  }
}

}  // namespace
}  // namespace contextd::store::testing
