#include "tools/trail_tools.h"

#include <gtest/gtest.h>

#include "base/executor.h"
#include "folding/testing/fakes.h"
#include "protocol/testing/recording_sink.h"
#include "store/backend.h"
#include "store/test_util.h"
#include "tools/trail_recorder.h"

namespace contextd::tools {
namespace {

using protocol::Json;

// A real McpServer session on a ManualExecutor, real SQLite stores in a temp dir, branch events
// published on the bus as the BranchManager publishes them (after committing the branch).
class TrailToolsTest : public ::testing::Test {
 protected:
  TrailToolsTest() : executor_(clock_), server_(executor_, {"contextd", "0", ""}) {}

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
    trail_store_ = std::move(*t);
    trail_ = std::make_unique<trail::Trail>(*trail_store_, clock_, Options());
    tools_ = std::make_unique<TrailTools>(*trail_, events_, *branches_, counter_);
    ASSERT_TRUE(tools_->Register(server_).ok());
    sink_ = std::make_shared<protocol::testing::RecordingSink>();
    protocol::SessionInfo info;
    info.session_id = "s1";
    info.transport = "test";
    session_ = server_.CreateSession(info, sink_);
    executor_.RunUntilIdle();
    Json init = Call("initialize", {{"protocolVersion", "2025-11-25"},
                                    {"capabilities", Json::object()},
                                    {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    ASSERT_TRUE(init.contains("result")) << init.dump();
    Feed(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }

  // The trail's options (the auto-scope tests turn auto-scopes on).
  virtual trail::TrailOptions Options() { return {}; }

  void Feed(std::string_view raw) {
    protocol::Incoming in = protocol::ParseIncoming(raw);
    for (auto& item : in.items) session_->Receive(std::move(std::get<protocol::Message>(item)));
    executor_.RunUntilIdle();
  }

  Json Call(std::string_view method, Json params) {
    sink_->Take();
    Feed(protocol::Serialize(protocol::MakeRequest(Json(++next_id_), method, std::move(params))));
    for (const Json& m : sink_->Take()) {
      if (m.contains("id") && m["id"] == next_id_) return m;
    }
    ADD_FAILURE() << "no response";
    return Json();
  }

  Json Tool(const std::string& name, Json args) {
    Json r = Call("tools/call", {{"name", name}, {"arguments", std::move(args)}});
    EXPECT_TRUE(r.contains("result")) << r.dump();
    return r["result"];
  }

  // Commits a branch and publishes branch.created, as the BranchManager does.
  void CreateBranch(const std::string& id, const std::string& parent, const std::string& desc) {
    folding::Branch b;
    b.id = id;
    b.session = key_;
    b.parent_id = parent;
    b.depth = parent.empty() ? 0 : 1;
    b.description = desc;
    b.prompt = "do the thing carefully";
    b.status = folding::BranchStatus::kActive;
    b.budget_allocated = 1000;
    folding::BranchWrite w;
    w.inserts.push_back(b);
    ASSERT_TRUE(branches_->Commit(w).ok());
    folding::BranchEvent e;
    e.type = folding::BranchEventType::kCreated;
    e.session = key_;
    e.branch_id = id;
    e.parent_id = parent;
    events_.Publish(e);
  }

  void ReturnBranch(const std::string& id, const std::string& summary) {
    folding::BranchWrite w;
    folding::BranchUpdate u;
    u.id = id;
    u.status = folding::BranchStatus::kCompleted;
    u.tokens_used = 500;
    u.summary = summary;
    u.finish_reason = "returned";
    u.finished_at_ms = 1;
    w.updates.push_back(u);
    ASSERT_TRUE(branches_->Commit(w).ok());
    folding::BranchEvent e;
    e.type = folding::BranchEventType::kFolded;
    e.session = key_;
    e.branch_id = id;
    e.status = folding::BranchStatus::kCompleted;
    events_.Publish(e);
  }

  trail::SessionRef Ref() { return TrailSessionFor(key_); }

  store::TempDir dir_;
  base::FakeClock clock_;
  base::ManualExecutor executor_;
  protocol::McpServer server_;
  folding::EventBus events_;
  folding::testing::WordTokenCounter counter_;
  std::unique_ptr<store::Backend> backend_;
  std::unique_ptr<folding::BranchStore> branches_;
  std::unique_ptr<trail::TrailStore> trail_store_;
  std::unique_ptr<trail::Trail> trail_;
  std::unique_ptr<TrailTools> tools_;
  std::shared_ptr<protocol::testing::RecordingSink> sink_;
  std::shared_ptr<protocol::Session> session_;
  folding::SessionKey key_{"local", "default", "s1"};
  int next_id_ = 0;
};

TEST_F(TrailToolsTest, ViewUnfoldSearchAndResources) {
  CreateBranch("br_one", "", "explore the parser");
  ASSERT_TRUE(trail_
                  ->RecordToolCall(Ref(), "br_one", "fs__read", "{\"path\":\"parser.cc\"}",
                                   "int parse() { return 42; } // many lines", 5, 300, false)
                  .ok());
  ReturnBranch("br_one", "parser.cc parse returns 42");
  CreateBranch("br_two", "", "debug the lexer");
  ASSERT_TRUE(
      trail_->RecordToolCall(Ref(), "br_two", "grep", "{}", "lexer.cc:10", 1, 4, false).ok());

  Json view = Tool("context_view", Json::object());
  EXPECT_FALSE(view.value("isError", false)) << view.dump();
  const Json& sc = view["structuredContent"];
  // created br_one (4 prompt words) + 5 + 300 + returned summary (4 words), created br_two
  // (4) + 1 + 4.
  EXPECT_EQ(sc["tokens_unfolded"], 4 + 5 + 300 + 4 + 4 + 1 + 4);
  // br_one folded to its summary (4); br_two open in full (4 + 1 + 4).
  EXPECT_EQ(sc["tokens_folded"], 4 + 4 + 1 + 4);
  std::string text = view["content"][0]["text"];
  EXPECT_EQ(sc["view"], text) << "a client that shows only the structured result shows the view";
  EXPECT_NE(text.find("= branch br_one [folded: 313 tokens -> 4] explore the parser :: parser.cc "
                      "parse returns 42"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("many lines"), std::string::npos) << text;
  EXPECT_NE(text.find("lexer.cc:10"), std::string::npos) << text;

  Json unfold = Tool("trail_unfold", {{"scope_id", "br_one"}, {"limit", 1}, {"offset", 1}});
  EXPECT_FALSE(unfold.value("isError", false)) << unfold.dump();
  EXPECT_EQ(unfold["structuredContent"]["total"], 3);
  ASSERT_EQ(unfold["structuredContent"]["events"].size(), 1u);
  EXPECT_EQ(unfold["structuredContent"]["events"][0]["payload"],
            "int parse() { return 42; } // many lines");
  // One event of three from offset 1: the next page starts at 2, in the text and the structure.
  EXPECT_EQ(unfold["structuredContent"]["next_offset"], 2);
  EXPECT_NE(unfold["content"][0]["text"].get<std::string>().find("call trail_unfold with offset 2"),
            std::string::npos);
  Json last = Tool("trail_unfold", {{"scope_id", "br_one"}, {"offset", 2}});
  EXPECT_FALSE(last["structuredContent"].contains("next_offset")) << last.dump();
  Json missing = Tool("trail_unfold", {{"scope_id", "br_nope"}});
  EXPECT_TRUE(missing.value("isError", false));
  Json bad_limit = Tool("trail_unfold", {{"scope_id", "br_one"}, {"limit", 500}});
  EXPECT_TRUE(bad_limit.value("isError", false));

  Json found = Tool("trail_search", {{"query", "parser"}});
  EXPECT_FALSE(found.value("isError", false)) << found.dump();
  ASSERT_EQ(found["structuredContent"]["hits"].size(), 1u);
  EXPECT_EQ(found["structuredContent"]["hits"][0]["scope_id"], "br_one");
  Json syntax = Tool("trail_search", {{"query", "\"(*"}});
  EXPECT_TRUE(syntax.value("isError", false)) << syntax.dump();
  EXPECT_NE(syntax["content"][0]["text"].get<std::string>().find("no word"), std::string::npos);
  Json ops = Tool("trail_search", {{"query", "lexer AND NEAR(\"x"}});
  EXPECT_FALSE(ops.value("isError", false)) << ops.dump();

  std::string root = sc["session_scope_id"];
  Json res = Call("resources/read", {{"uri", "trail://sessions/" + root}});
  ASSERT_TRUE(res.contains("result")) << res.dump();
  Json body = Json::parse(res["result"]["contents"][0]["text"].get<std::string>());
  EXPECT_EQ(body["scopes"].size(), 3u);
  EXPECT_EQ(body["tokens_folded"], sc["tokens_folded"]);
  res = Call("resources/read", {{"uri", "trail://scopes/br_two"}});
  ASSERT_TRUE(res.contains("result")) << res.dump();
  body = Json::parse(res["result"]["contents"][0]["text"].get<std::string>());
  EXPECT_EQ(body["scope"]["status"], "open");
  EXPECT_EQ(body["events"].size(), 2u);
  res = Call("resources/read", {{"uri", "trail://scopes/br_none"}});
  EXPECT_TRUE(res.contains("error")) << res.dump();

  // A folded-result handle names one event: it comes back with its call.
  auto kept =
      trail_->FindOrRecordToolCall(Ref(), "", "fs__read", "{\"path\":\"parser.cc\"}",
                                   "int parse() { return 42; } // many lines", 5, 300, false);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->scope_id, "br_one") << "found where it was recorded, not recorded again";
  Json one = Tool("trail_unfold", {{"scope_id", "br_one"}, {"event", kept->result_seq}});
  EXPECT_FALSE(one.value("isError", false)) << one.dump();
  ASSERT_EQ(one["structuredContent"]["events"].size(), 2u) << one.dump();
  EXPECT_EQ(one["structuredContent"]["events"][0]["kind"], "tool_call");
  EXPECT_EQ(one["structuredContent"]["events"][1]["payload"],
            "int parse() { return 42; } // many lines");
  EXPECT_NE(one["content"][0]["text"].get<std::string>().find("many lines"), std::string::npos);
  Json elsewhere = Tool("trail_unfold", {{"scope_id", "br_two"}, {"event", kept->result_seq}});
  EXPECT_TRUE(elsewhere.value("isError", false)) << "an event is found in its own scope only";
  // A result the trail never saw is recorded now, in the session root.
  auto fresh = trail_->FindOrRecordToolCall(Ref(), "", "Read", "{}", "never recorded", 1, 2, false);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->scope_id.rfind("ses_", 0), 0u) << fresh->scope_id;
  EXPECT_EQ(fresh->call_seq + 1, fresh->result_seq);
}

// trail.auto_scope_upstreams on: the recorder sends root-level upstream calls to auto-scopes,
// the trail tools fold the open one before they act.
class AutoScopeToolsTest : public TrailToolsTest {
 protected:
  trail::TrailOptions Options() override {
    trail::TrailOptions o;
    o.auto_scope_upstreams = true;
    o.count_tokens = [this](std::string_view text) {
      return static_cast<int64_t>(counter_.Count(text));
    };
    return o;
  }
  protocol::SessionInfo Info() { return protocol::SessionInfo{"s1", "local", "test", "", "", ""}; }
};

TEST_F(AutoScopeToolsTest, RootCallsFoldIntoAnAutoScopeThatContextViewShowsAsItsSummary) {
  TrailRecorder recorder(*trail_);
  recorder.OnProxiedCall(Info(), "", "fs__read_text_file", R"({"path":"/w/a.txt"})",
                         std::string(2000, 'x'), 5, 2000, false);
  recorder.OnProxiedCall(Info(), "", "fs__read_text_file", R"({"path":"/w/b.txt"})", "short", 5, 1,
                         false);
  recorder.OnProxiedCall(Info(), "", "contextd+upstream://fs/file:///w/c.txt", "", "c text", 0, 2,
                         false);
  std::string fs_scope = trail_->OpenAutoScope(Ref());
  ASSERT_EQ(fs_scope.rfind("auto_", 0), 0u) << fs_scope;

  // An upstream without "__" cannot be told: recorded in the root, the auto-scope stays open.
  recorder.OnProxiedCall(Info(), "", "oddtool", "{}", "odd", 1, 1, false);
  EXPECT_EQ(trail_->OpenAutoScope(Ref()), fs_scope);
  // A call charged to a branch goes to the branch.
  CreateBranch("br_one", "", "explore");
  recorder.OnProxiedCall(Info(), "br_one", "git__log", "{}", "commit abc", 1, 2, false);
  EXPECT_EQ(trail_->OpenAutoScope(Ref()), fs_scope);

  Json view = Tool("context_view", Json::object());
  EXPECT_FALSE(view.value("isError", false)) << view.dump();
  EXPECT_EQ(trail_->OpenAutoScope(Ref()), "") << "context_view folds the open auto-scope first";
  const Json& sc = view["structuredContent"];
  EXPECT_EQ(sc["auto_scopes_folded"], 1);
  EXPECT_EQ(sc["auto_scopes_open"], 0);
  std::string text = view["content"][0]["text"];
  std::string summary =
      "fs: 3 calls (3 ok, 0 errors), 2013 tokens; read_text_file x2 (path=/w/a.txt; "
      "path=/w/b.txt), resource x1 (file:///w/c.txt)";
  EXPECT_NE(text.find("= auto " + fs_scope + " [folded: 2013 tokens -> "), std::string::npos)
      << text;
  EXPECT_NE(text.find("upstream fs :: " + summary), std::string::npos) << text;
  EXPECT_EQ(text.find(std::string(2000, 'x')), std::string::npos) << text;
  EXPECT_NE(text.find("1 auto-scope(s) folded, 0 open"), std::string::npos) << text;
  EXPECT_GT(sc["tokens_unfolded"].get<int64_t>() - sc["tokens_folded"].get<int64_t>(), 1900);

  Json unfold = Tool("trail_unfold", {{"scope_id", fs_scope}});
  EXPECT_FALSE(unfold.value("isError", false)) << unfold.dump();
  EXPECT_EQ(unfold["structuredContent"]["total"], 6);
  EXPECT_EQ(unfold["structuredContent"]["scope"]["kind"], "auto");
  EXPECT_EQ(unfold["structuredContent"]["scope"]["summary"], summary);
  std::string unfold_text = unfold["content"][0]["text"];
  EXPECT_EQ(unfold_text.rfind("auto " + fs_scope + " [folded] upstream fs", 0), 0u) << unfold_text;

  Json found = Tool("trail_search", {{"query", "read_text_file"}});
  ASSERT_EQ(found["structuredContent"]["hits"].size(), 1u) << found.dump();
  EXPECT_EQ(found["structuredContent"]["hits"][0]["scope_id"], fs_scope);

  std::string root = sc["session_scope_id"];
  Json res = Call("resources/read", {{"uri", "trail://sessions/" + root}});
  ASSERT_TRUE(res.contains("result")) << res.dump();
  Json body = Json::parse(res["result"]["contents"][0]["text"].get<std::string>());
  bool listed = false;
  for (const Json& scope : body["scopes"]) {
    if (scope["scope_id"] == fs_scope) listed = scope["kind"] == "auto";
  }
  EXPECT_TRUE(listed) << body.dump();
}

TEST_F(AutoScopeToolsTest, TheFoldHookFoldsAndEachUpstreamGetsItsOwnScope) {
  TrailRecorder recorder(*trail_);
  recorder.OnProxiedCall(Info(), "", "fs__list_directory", "{}", "a", 1, 1, false);
  std::string first = trail_->OpenAutoScope(Ref());
  recorder.OnProxiedCall(Info(), "", "git__status", "{}", "Error: no repo", 1, 3, true);
  std::string second = trail_->OpenAutoScope(Ref());
  EXPECT_NE(first, second);
  auto folded = trail_->GetScope(Ref(), first);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(folded->status, trail::ScopeStatus::kFolded);
  tools_->FoldAutoScope(Info());  // what FoldingTools runs before branch_create/return/status
  EXPECT_EQ(trail_->OpenAutoScope(Ref()), "");
  auto git = trail_->GetScope(Ref(), second);
  ASSERT_TRUE(git.ok());
  EXPECT_EQ(git->summary,
            "git: 1 call (0 ok, 1 error), 4 tokens; status x1; errors: status: Error: no repo");
}

}  // namespace
}  // namespace contextd::tools
