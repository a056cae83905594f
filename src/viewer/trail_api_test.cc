#include "viewer/trail_api.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/clock.h"
#include "nlohmann/json.hpp"
#include "store/backend.h"
#include "store/test_util.h"
#include "viewer/ui_routes.h"

namespace contextd::viewer {
namespace {

using Json = nlohmann::json;

// The API over real SQLite stores in a temp dir, fed through the real Trail.
class TrailApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::BackendOptions options;
    options.sqlite_path = dir_.File("contextd.db");
    auto backend = store::OpenBackend(options);
    ASSERT_TRUE(backend.ok());
    backend_ = std::move(*backend);
    auto b = backend_->OpenBranchStore();
    auto t = backend_->OpenTrailStore();
    ASSERT_TRUE(b.ok() && t.ok());
    branches_ = std::move(*b);
    store_ = std::move(*t);
    trail_ = std::make_unique<trail::Trail>(*store_, clock_);
    api_ = std::make_unique<TrailApi>(*trail_, *store_, *branches_);
  }

  // A session of `tenant` with one returned branch (3 tool calls inside, one with a redaction
  // marker) and one force-returned by its budget. Returns the root id.
  std::string MakeSession(const std::string& tenant, const std::string& id) {
    trail::SessionRef s{tenant, "proj", id};
    auto root = trail_->RootScope(s);
    EXPECT_TRUE(root.ok());
    folding::Branch b;
    b.id = "br_" + id + "_a";
    b.session = folding::SessionKey{tenant, "proj", id};
    b.description = "explore the parser";
    b.status = folding::BranchStatus::kCompleted;
    b.budget_allocated = 1000;
    b.tokens_used = 400;
    b.finish_reason = "returned";
    folding::Branch forced = b;
    forced.id = "br_" + id + "_b";
    forced.description = "read every log file";
    forced.status = folding::BranchStatus::kBudgetExhausted;
    forced.tokens_used = 1000;
    forced.finish_reason = "budget exhausted";
    folding::BranchWrite w;
    w.inserts = {b, forced};
    EXPECT_TRUE(branches_->Commit(w).ok());
    EXPECT_TRUE(trail_->OnBranchCreated(s, b.id, "", b.description, "look", 5).ok());
    for (int i = 0; i < 3; ++i) {
      std::string result = i == 1 ? "token=[REDACTED:github-pat:ghp] end" : std::string(2000, 'x');
      EXPECT_TRUE(trail_->RecordToolCall(s, b.id, "fs__read", "{}", result, 2, 100, false).ok());
    }
    EXPECT_TRUE(trail_->OnBranchFolded(b.id, "parser is LL(1)", 4, false, "").ok());
    EXPECT_TRUE(trail_->OnBranchCreated(s, forced.id, "", forced.description, "logs", 5).ok());
    EXPECT_TRUE(trail_->RecordToolCall(s, forced.id, "fs__read", "{}", "log", 1, 900, false).ok());
    EXPECT_TRUE(
        trail_->OnBranchFolded(forced.id, "partial: logs", 3, true, "budget exhausted").ok());
    return *root;
  }

  Json Get(const std::string& tenant, const std::string& path, const std::string& query = "",
           int want = 200) {
    ApiResponse r = api_->Get(tenant, path, query);
    EXPECT_EQ(r.status, want) << path << "?" << query << " -> " << r.body;
    return Json::parse(r.body);
  }

  store::TempDir dir_;
  base::FakeClock clock_;
  std::unique_ptr<store::Backend> backend_;
  std::unique_ptr<folding::BranchStore> branches_;
  std::unique_ptr<trail::TrailStore> store_;
  std::unique_ptr<trail::Trail> trail_;
  std::unique_ptr<TrailApi> api_;
};

TEST_F(TrailApiTest, SessionsCarryTheFoldedViewsTotalsAndStayInTheirTenant) {
  std::string root = MakeSession("acme", "s1");
  MakeSession("other", "s2");
  Json j = Get("acme", "/api/v1/sessions");
  ASSERT_EQ(j["sessions"].size(), 1u);
  const Json& s = j["sessions"][0];
  EXPECT_EQ(s["root_id"], root);
  EXPECT_EQ(s["branches"], 2);
  EXPECT_EQ(s["open_branches"], 0);
  EXPECT_EQ(s["status"], "idle");
  auto view = trail_->ViewRoot(root, -1);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(s["tokens_unfolded"], view->tokens_unfolded);
  EXPECT_EQ(s["tokens_folded"], view->tokens_folded);
  EXPECT_GT(s["tokens_saved"].get<int64_t>(), 0);
  EXPECT_EQ(Get("nobody", "/api/v1/sessions")["sessions"].size(), 0u);
}

TEST_F(TrailApiTest, ScopesCarryBudgetsStatusesAndForceReturnReasons) {
  std::string root = MakeSession("acme", "s1");
  Json j = Get("acme", "/api/v1/sessions/" + root + "/scopes");
  ASSERT_EQ(j["scopes"].size(), 3u);
  EXPECT_EQ(j["scopes"][0]["kind"], "session");
  const Json& a = j["scopes"][1];
  EXPECT_EQ(a["status"], "folded");
  EXPECT_EQ(a["summary"], "parser is LL(1)");
  EXPECT_EQ(a["branch"]["budget_allocated"], 1000);
  EXPECT_EQ(a["branch"]["forced"], false);
  const Json& b = j["scopes"][2];
  EXPECT_EQ(b["branch"]["status"], "budget_exhausted");
  EXPECT_EQ(b["branch"]["forced"], true);
  EXPECT_EQ(b["branch"]["finish_reason"], "budget exhausted");
  // Another tenant sees nothing of it.
  Get("other", "/api/v1/sessions/" + root + "/scopes", "", 404);
  Get("acme", "/api/v1/sessions/nope/scopes", "", 404);
}

TEST_F(TrailApiTest, EventsComeInBoundedPagesWithPreviewsAndRedactionCounts) {
  MakeSession("acme", "s1");
  const std::string path = "/api/v1/scopes/br_s1_a/events";
  Json first = Get("acme", path, "limit=2");
  EXPECT_EQ(first["total"], 7);  // 3 calls + 3 results + branch_returned
  ASSERT_EQ(first["events"].size(), 2u);
  EXPECT_EQ(first["next_offset"], 2);
  Json rest = Get("acme", path, "offset=6&limit=200");
  EXPECT_TRUE(rest["next_offset"].is_null());
  Json all = Get("acme", path);
  const Json& big = all["events"][1];
  EXPECT_EQ(big["payload_bytes"], 2000);
  EXPECT_EQ(big["truncated"], true);
  EXPECT_EQ(big["payload"].get<std::string>().size(), kApiPreviewBytes);
  EXPECT_EQ(all["events"][3]["redactions"], 1);
  Get("acme", path, "limit=201", 400);
  Get("acme", path, "limit=0", 400);
  Get("acme", path, "offset=-1", 400);
  Get("acme", path, "limit=abc", 400);
  Get("other", path, "", 404);
}

TEST_F(TrailApiTest, OneEventInFullWithItsRedactionRules) {
  MakeSession("acme", "s1");
  Json page = Get("acme", "/api/v1/scopes/br_s1_a/events");
  int64_t seq = page["events"][3]["seq"];
  Json j = Get("acme", "/api/v1/scopes/br_s1_a/events/" + std::to_string(seq));
  EXPECT_EQ(j["event"]["payload"], "token=[REDACTED:github-pat:ghp] end");
  EXPECT_EQ(j["event"]["redaction_rules"], Json::array({"github-pat"}));
  Get("acme", "/api/v1/scopes/br_s1_b/events/" + std::to_string(seq), "", 404);
  Get("acme", "/api/v1/scopes/br_s1_a/events/x1", "", 400);
  Get("acme", "/api/v1/scopes/br_s1_a/events/0", "", 400);
}

TEST_F(TrailApiTest, SearchFindsSummariesWithTheirSessionRoot) {
  std::string root = MakeSession("acme", "s1");
  Json j = Get("acme", "/api/v1/search", "q=parser");
  ASSERT_GE(j["hits"].size(), 1u);
  EXPECT_EQ(j["hits"][0]["id"], "br_s1_a");
  EXPECT_EQ(j["hits"][0]["root_id"], root);
  EXPECT_EQ(Get("other", "/api/v1/search", "q=parser")["hits"].size(), 0u);
  Get("acme", "/api/v1/search", "", 400);
  Get("acme", "/api/v1/search", "q=%22%29%28", 400);  // no word in it
}

TEST_F(TrailApiTest, StatsSumTokensSavedPerSessionAndPerDay) {
  MakeSession("acme", "s1");
  MakeSession("acme", "s2");
  Json j = Get("acme", "/api/v1/stats");
  ASSERT_EQ(j["sessions"].size(), 2u);
  ASSERT_EQ(j["days"].size(), 1u);
  EXPECT_EQ(j["days"][0]["day"], "2025-06-15");
  EXPECT_EQ(j["tokens_saved"], j["sessions"][0]["tokens_saved"].get<int64_t>() +
                                   j["sessions"][1]["tokens_saved"].get<int64_t>());
}

TEST_F(TrailApiTest, FingerprintChangesWithANewEvent) {
  std::string root = MakeSession("acme", "s1");
  auto before = api_->Fingerprint("acme", root);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(api_->Fingerprint("other", root).ok());
  ASSERT_TRUE(trail_->RecordToolCall({"acme", "proj", "s1"}, "", "t", "{}", "r", 1, 1, false).ok());
  auto after = api_->Fingerprint("acme", root);
  ASSERT_TRUE(after.ok());
  EXPECT_NE(*before, *after);
}

TEST_F(TrailApiTest, ConversationsShowFoldsMadeAndSkippedWithReasons) {
  // Without the model gateway: an empty list, and says so.
  Json off = Get("local", "/api/v1/conversations");
  EXPECT_EQ(off["model_gateway"], false);
  EXPECT_TRUE(off["conversations"].empty());

  auto conversations = backend_->OpenConversationStore();
  ASSERT_TRUE(conversations.ok()) << conversations.status();
  api_->SetConversations(conversations->get());
  auto record = [&](const std::string& tenant, const std::string& conversation, int64_t at_ms,
                    int folds_new, std::map<std::string, int> skipped) {
    model::UsageRecord r;
    r.key = model::ConversationKey{tenant, conversation, "th"};
    r.project = "proj";
    r.request_id = "mreq_" + std::to_string(at_ms);
    r.at_ms = at_ms;
    r.tokens_before = 1000;
    r.tokens_after = folds_new > 0 ? 400 : 1000;
    r.folds_new = folds_new;
    r.folds_skipped = std::move(skipped);
    ASSERT_TRUE((*conversations)->RecordUsage(r).ok());
  };
  record("local", "sess-old", 100, 0, {{"unknown_block", 2}});
  record("local", "sess-new", 200, 1, {});
  record("local", "sess-new", 300, 1, {{"not_at_tail", 1}, {"some_new_reason", 2}});
  record("other", "sess-theirs", 400, 9, {});

  Json all = Get("local", "/api/v1/conversations");
  EXPECT_EQ(all["model_gateway"], true);
  ASSERT_EQ(all["conversations"].size(), 2u);
  const Json& newest = all["conversations"][0];
  EXPECT_EQ(newest["conversation"], "sess-new");
  EXPECT_EQ(newest["project"], "proj");
  EXPECT_EQ(newest["requests"], 2);
  EXPECT_EQ(newest["folds_made"], 2);
  EXPECT_EQ(newest["folds_skipped"], 3);
  EXPECT_EQ(newest["folds_skipped_by_reason"], (Json{{"not_at_tail", 1}, {"some_new_reason", 2}}));
  EXPECT_EQ(newest["tokens_before"], 2000);
  EXPECT_EQ(newest["tokens_after"], 800);
  EXPECT_EQ(newest["tokens_saved"], 1200);
  EXPECT_EQ(newest["first_at_ms"], 200);
  EXPECT_EQ(newest["last_at_ms"], 300);
  EXPECT_EQ(all["conversations"][1]["conversation"], "sess-old");
  EXPECT_EQ(all["conversations"][1]["folds_made"], 0);
  EXPECT_EQ(all["conversations"][1]["folds_skipped_by_reason"], (Json{{"unknown_block", 2}}));

  Json one = Get("local", "/api/v1/conversations", "limit=1");
  ASSERT_EQ(one["conversations"].size(), 1u);
  EXPECT_EQ(one["conversations"][0]["conversation"], "sess-new");
  // Another tenant's conversations are not listed.
  Json theirs = Get("other", "/api/v1/conversations");
  ASSERT_EQ(theirs["conversations"].size(), 1u);
  EXPECT_EQ(theirs["conversations"][0]["conversation"], "sess-theirs");
  Get("local", "/api/v1/conversations", "limit=0", 400);
  Get("local", "/api/v1/conversations", "limit=abc", 400);
  api_->SetConversations(nullptr);
}

TEST_F(TrailApiTest, UnknownPathsAre404) {
  Get("local", "/api/v1/nothing", "", 404);
  Get("local", "/api/v1/sessions/x/y/z", "", 404);
  Get("local", "/api/v2/sessions", "", 404);
}

TEST(QueryParamTest, DecodesPercentAndPlus) {
  EXPECT_EQ(QueryParam("a=1&q=a+b%20c%2", "q"), "a b c%2");
  EXPECT_EQ(QueryParam("flag&x=1", "flag"), "");
  EXPECT_EQ(QueryParam("x=1", "y"), std::nullopt);
}

TEST(RedactionRulesTest, FindsMarkers) {
  EXPECT_EQ(RedactionRules("a [REDACTED:aws-key:AKIA] b [REDACTED:jwt:ey] [REDACTED:"),
            (std::vector<std::string>{"aws-key", "jwt"}));
}

TEST(SameOriginTest, OriginMustNameTheHost) {
  EXPECT_TRUE(SameOrigin("", "127.0.0.1:9090"));
  EXPECT_TRUE(SameOrigin("http://127.0.0.1:9090", "127.0.0.1:9090"));
  EXPECT_TRUE(SameOrigin("http://LOCALHOST:9090", "localhost:9090"));
  EXPECT_FALSE(SameOrigin("http://localhost:9091", "localhost:9090"));
  EXPECT_FALSE(SameOrigin("null", "localhost:9090"));
  EXPECT_FALSE(SameOrigin("http://evil.test", "localhost:9090"));
}

TEST(UiAssetsTest, ThePageAndItsAssetsAreEmbedded) {
  auto index = FindUiAsset("index.html");
  ASSERT_TRUE(index.has_value());
  EXPECT_NE(index->body.find("/ui/app.js"), std::string_view::npos);
  EXPECT_TRUE(FindUiAsset("app.js").has_value());
  EXPECT_TRUE(FindUiAsset("app.css").has_value());
  EXPECT_FALSE(FindUiAsset("../etc/passwd").has_value());
}

}  // namespace
}  // namespace contextd::viewer
