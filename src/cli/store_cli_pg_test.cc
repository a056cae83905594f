// `contextd trail`, `contextd usage` and `contextd memory` against PostgreSQL (store.backend:
// postgres): they read what instances wrote to the shared database, and refuse a database this
// binary would have to migrate. A real server (PgTestServer); skipped where PostgreSQL cannot
// start.
#include <sstream>
#include <string>

#include "cli/memory_cli.h"
#include "cli/trail_cli.h"
#include "cli/usage_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/config.h"
#include "store/backend.h"
#include "store/testing/pg_test_server.h"

namespace contextd::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class StoreCliPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CONTEXTD_REQUIRE_PG_OR_SKIP();
    auto db = store::testing::PgTestServer::Shared()->CreateDatabase();
    ASSERT_TRUE(db.ok()) << db.status();
    conninfo_ = store::testing::PgTestServer::Shared()->Conninfo(*db);
    store_.backend = "postgres";
    store_.postgres_url = conninfo_;
  }

  // A serving instance's backend (a pool of 2, migrated at open).
  absl::StatusOr<std::unique_ptr<store::Backend>> Backend() const {
    store::BackendOptions o;
    o.kind = store::BackendKind::kPostgres;
    o.postgres_conninfo = conninfo_;
    o.postgres_pool_size = 2;
    return store::OpenBackend(o);
  }

  std::string conninfo_;
  server::StoreConfig store_;
};

TEST_F(StoreCliPgTest, TrailListsShowsAndUnfoldsWhatAnInstanceWrote) {
  auto backend = Backend();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto trail = (*backend)->OpenTrailStore();
  ASSERT_TRUE(trail.ok()) << trail.status();
  trail::SessionRef session{"acme", "p_0123456789abcdef", "sid-1"};
  trail::Scope root;
  root.id = "ses_00000000000000000000000000000001";
  root.session = session;
  root.kind = trail::ScopeKind::kSession;
  root.created_at_ms = 1000;
  ASSERT_TRUE((*trail)->OpenScope(root).ok());
  trail::Scope branch;
  branch.id = "br_00000000000000000000000000000002";
  branch.session = session;
  branch.kind = trail::ScopeKind::kBranch;
  branch.parent_id = root.id;
  branch.description = "find the cookie parser";
  branch.created_at_ms = 1001;
  ASSERT_TRUE((*trail)->OpenScope(branch).ok());
  trail::NewEvent event;
  event.scope_id = branch.id;
  event.kind = trail::EventKind::kToolResult;
  event.label = "grep";
  event.payload = "src/http/cookies.py:12:def parse_cookie(raw):";
  event.tokens = 14;
  event.at_ms = 1002;
  ASSERT_TRUE((*trail)->AppendEvents({event}).ok());
  ASSERT_TRUE((*trail)->FoldScope(branch.id, "parse_cookie in src/http/cookies.py", 9, 1003).ok());

  TrailCommand list;
  list.command = "list";
  list.store = store_;
  std::ostringstream out, err;
  ASSERT_EQ(RunTrailCommand(list, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr(root.id));
  EXPECT_THAT(out.str(), HasSubstr("acme/p_0123456789abcdef/sid-1"));
  EXPECT_THAT(out.str(), HasSubstr("find the cookie parser"));

  TrailCommand unfold;
  unfold.command = "unfold";
  unfold.id = branch.id;
  unfold.store = store_;
  std::ostringstream out2, err2;
  ASSERT_EQ(RunTrailCommand(unfold, out2, err2), 0) << err2.str();
  EXPECT_THAT(out2.str(), HasSubstr("def parse_cookie(raw):"));

  TrailCommand missing = unfold;
  missing.id = "br_ffffffffffffffffffffffffffffffff";
  std::ostringstream out3, err3;
  EXPECT_EQ(RunTrailCommand(missing, out3, err3), 2);
  EXPECT_THAT(err3.str(), HasSubstr("not found"));
}

TEST_F(StoreCliPgTest, UsageSumsPerTenantAndProject) {
  auto backend = Backend();
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto conversations = (*backend)->OpenConversationStore();
  ASSERT_TRUE(conversations.ok()) << conversations.status();
  auto record = [&](const std::string& tenant, const std::string& project, int64_t input,
                    int64_t at_ms) {
    model::UsageRecord r;
    r.key.tenant = tenant;
    r.key.conversation = "c";
    r.key.thread = "t";
    r.project = project;
    r.request_id = "mreq_" + std::to_string(at_ms);
    r.at_ms = at_ms;
    r.api = "anthropic";
    r.model = "claude";
    r.status = 200;
    r.input_tokens = input;
    r.output_tokens = 10;
    ASSERT_TRUE((*conversations)->RecordUsage(r).ok());
  };
  record("acme", "web", 100, 1'000'000);
  record("acme", "web", 50, 2'000'000);
  record("acme", "api", 7, 2'000'000);
  record("globex", "x", 1000, 2'000'000);

  UsageCommand usage;
  usage.store = store_;
  usage.tenant = "acme";
  usage.json = true;
  std::ostringstream out, err;
  ASSERT_EQ(RunUsageCommand(usage, out, err), 0) << err.str();
  auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j["usage"].size(), 2u) << out.str();
  EXPECT_EQ(j["usage"][0]["project"], "api");
  EXPECT_EQ(j["usage"][1]["project"], "web");
  EXPECT_EQ(j["usage"][1]["requests"], 2);
  EXPECT_EQ(j["usage"][1]["input_tokens"], 150);
  EXPECT_THAT(out.str(), Not(HasSubstr("globex")));

  usage.since = "1500";  // unix seconds: only the later requests
  usage.tenant = "";
  std::ostringstream out2, err2;
  ASSERT_EQ(RunUsageCommand(usage, out2, err2), 0) << err2.str();
  j = nlohmann::json::parse(out2.str());
  ASSERT_EQ(j["usage"].size(), 3u) << out2.str();
  EXPECT_EQ(j["usage"][1]["input_tokens"], 50);  // acme/web
}

TEST_F(StoreCliPgTest, MemoryImportsListsSearchesAndRetiresInTheSharedDatabase) {
  {  // The schema, as `contextd migrate` (or a serving instance) leaves it.
    auto db = Backend();
    ASSERT_TRUE(db.ok()) << db.status();
  }
  std::istringstream lines(
      R"({"id":"mem_00000000000000000000000000000001","tenant":"acme","project":"web",)"
      R"("title":"Cache the vocabulary","description":"Loading tokens is slow.",)"
      R"("content":"Load the BPE vocabulary off the executor, once.","scope":"project"})"
      "\n"
      R"({"id":"mem_00000000000000000000000000000002","tenant":"globex","project":"x",)"
      R"("title":"Vocabulary caching at globex","description":"Same lesson, other tenant.",)"
      R"("content":"Cache the vocabulary per process.","scope":"org"})"
      "\n");
  MemoryCommand import;
  import.command = "import";
  import.arg = "-";
  import.store = store_;
  std::ostringstream out, err;
  ASSERT_EQ(RunMemoryCommand(import, lines, out, err), 0) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("imported 2, refused 0"));

  MemoryCommand list;
  list.command = "list";
  list.tenant = "acme";
  list.project = "web";
  list.store = store_;
  std::istringstream none;
  std::ostringstream out2, err2;
  ASSERT_EQ(RunMemoryCommand(list, none, out2, err2), 0) << err2.str();
  EXPECT_THAT(out2.str(), HasSubstr("mem_00000000000000000000000000000001"));
  EXPECT_THAT(out2.str(), Not(HasSubstr("mem_00000000000000000000000000000002")));

  // Search as acme: globex's org item only when the deployment shares org items.
  MemoryCommand search = list;
  search.command = "search";
  search.arg = "cache the vocabulary";
  std::ostringstream out3, err3;
  ASSERT_EQ(RunMemoryCommand(search, none, out3, err3), 0) << err3.str();
  EXPECT_THAT(out3.str(), HasSubstr("mem_00000000000000000000000000000001"));
  EXPECT_THAT(out3.str(), Not(HasSubstr("mem_00000000000000000000000000000002")));
  search.org_across_tenants = true;
  std::ostringstream out4, err4;
  ASSERT_EQ(RunMemoryCommand(search, none, out4, err4), 0) << err4.str();
  EXPECT_THAT(out4.str(), HasSubstr("mem_00000000000000000000000000000002"));

  MemoryCommand retire = list;
  retire.command = "retire";
  retire.arg = "mem_00000000000000000000000000000001";
  std::ostringstream out5, err5;
  ASSERT_EQ(RunMemoryCommand(retire, none, out5, err5), 0) << err5.str();
  EXPECT_THAT(out5.str(), HasSubstr("retired"));
}

TEST_F(StoreCliPgTest, RefusesADatabaseWithoutTheSchemaInsteadOfMigratingIt) {
  // A read command never migrates: an empty database is an error naming the schema.
  UsageCommand usage;
  usage.store = store_;
  std::ostringstream out, err;
  EXPECT_EQ(RunUsageCommand(usage, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("schema"));
  TrailCommand list;
  list.command = "list";
  list.store = store_;
  std::ostringstream out2, err2;
  EXPECT_EQ(RunTrailCommand(list, out2, err2), 2);
  EXPECT_THAT(err2.str(), HasSubstr("schema"));
  MemoryCommand memories;
  memories.command = "list";
  memories.store = store_;
  std::istringstream none;
  std::ostringstream out3, err3;
  EXPECT_EQ(RunMemoryCommand(memories, none, out3, err3), 2);
  EXPECT_THAT(err3.str(), HasSubstr("schema"));
}

}  // namespace
}  // namespace contextd::cli
