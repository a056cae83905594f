// contextd export|import between SQLite and PostgreSQL: a store with branches, charges, a trail,
// a conversation and memories moves from SQLite to PostgreSQL and back, and every store reads
// the same state (search included) in the target.
#include "store/store_transfer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "memory/memory_item.h"
#include "store/testing/pg_backend.h"
#include "store/testing/sqlite_backend.h"
#include "store/trail_store_contract.h"

namespace contextd::store {
namespace {

using testing::PgBackend;
using testing::SqliteBackend;

// A command's options for the SQLite file at `path`.
BackendOptions SqliteAt(const std::string& path) {
  BackendOptions o;
  o.sqlite_path = path;
  o.one_shot = true;
  return o;
}

// Writes a little of everything through the interfaces.
void Fill(testing::StoreBackend& b) {
  auto branches = b.OpenBranchStore();
  ASSERT_TRUE(branches.ok()) << branches.status();
  folding::Branch parent;
  parent.id = "br_p";
  parent.session = {"local", "default", "s1"};
  parent.description = "explore the tokenizer";
  parent.prompt = "find the merge loop";
  parent.deadline_wall_ms = 99;
  folding::Branch child = parent;
  child.id = "br_c";
  child.parent_id = "br_p";
  child.depth = 1;
  child.injected_context.push_back({"memory", "mem_1", "use ripgrep", 3, "", "", ""});
  folding::ChargeRow charge{"br_c", 5, "tool_result", "grep", "excerpt", 40};
  ASSERT_TRUE((*branches)->Commit(folding::BranchWrite{{parent, child}, {}, {charge}}).ok());
  folding::BranchUpdate done{
      "br_c", folding::BranchStatus::kCompleted, 60, 0, "found it", "returned", 7, true};
  ASSERT_TRUE((*branches)->Commit(folding::BranchWrite{{}, {done}, {}}).ok());

  auto trail = b.OpenTrailStore();
  ASSERT_TRUE(trail.ok()) << trail.status();
  trail::SessionRef s;
  s.session_id = "s1";
  ASSERT_TRUE((*trail)->OpenScope(testing::MakeScope("ses_1", "", "session", s)).ok());
  ASSERT_TRUE((*trail)->OpenScope(testing::MakeScope("br_c", "ses_1", "debug the lexer", s)).ok());
  std::string bytes("nul\0byte", 8);
  ASSERT_TRUE(
      (*trail)
          ->AppendEvents({{"br_c", trail::EventKind::kToolResult, "fs__read", bytes, 4, true, 6}})
          .ok());
  ASSERT_TRUE((*trail)->FoldScope("br_c", "the lexer overflowed in src/lex.c", 8, 7).ok());

  auto conv = b.OpenConversationStore();
  ASSERT_TRUE(conv.ok()) << conv.status();
  model::ConversationUpdate u;
  u.frontier = {std::string("\0\xff", 2), "h2"};
  u.new_rewrites = {{model::RewriteKind::kFold, "toolu_1", "{\"branch\":\"br_c\"}"}};
  u.at_ms = 9;
  ASSERT_TRUE((*conv)->Save({"local", "conv", "th"}, u).ok());

  auto mem = b.OpenMemoryStore();
  ASSERT_TRUE(mem.ok()) << mem.status();
  memory::MemoryItem item;
  item.id = "mem_1";
  item.tenant = "local";
  item.project = "default";
  item.title = "Zeppelin parser";
  item.description = "When parsing zeppelins.";
  item.content = "Walrus tokens are skipped.";
  item.status = memory::Status::kActive;
  memory::HistoryEntry h;
  h.memory_id = "mem_1";
  h.action = "recorded";
  ASSERT_TRUE((*mem)->Insert(item, h).ok());
  ASSERT_TRUE((*mem)->PutVector("mem_1", "m", {1.0f, -2.5f}).ok());

  auto sessions = b.OpenMcpSessionStore();
  ASSERT_TRUE(sessions.ok()) << sessions.status();
  McpSessionRecord open;
  open.id = "sid_open";
  open.tenant = "local";
  open.project = "default";
  open.protocol_version = "2025-06-18";
  open.client_capabilities = "{\"roots\":{}}";
  open.client_info = "{}";
  open.created_ms = 1;
  open.last_seen_ms = 2;
  ASSERT_TRUE((*sessions)->Create(open).ok());
  McpSessionRecord ended = open;
  ended.id = "sid_ended";
  ASSERT_TRUE((*sessions)->Create(ended).ok());
  ASSERT_TRUE(*(*sessions)->End("sid_ended", 3, "client deleted session"));
}

// Reads it all back through the interfaces of `b`.
void Check(testing::StoreBackend& b) {
  auto branches = b.OpenBranchStore();
  ASSERT_TRUE(branches.ok()) << branches.status();
  auto c = (*branches)->Get("br_c");
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->parent_id, "br_p");
  EXPECT_EQ((*c)->status, folding::BranchStatus::kCompleted);
  EXPECT_TRUE((*c)->memory_queued);
  ASSERT_EQ((*c)->injected_context.size(), 1u);
  auto listed = (*branches)->ListSession({"local", "default", "s1"});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "br_p");  // creation order kept
  EXPECT_EQ((*branches)->GetRecentCharges("br_c", 5)->total, 1);

  auto trail = b.OpenTrailStore();
  ASSERT_TRUE(trail.ok());
  auto page = (*trail)->ListEvents("br_c", 0, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->events.size(), 1u);
  EXPECT_EQ(page->events[0].payload, std::string("nul\0byte", 8));
  EXPECT_TRUE(page->events[0].is_error);
  auto hits = (*trail)->Search("local", "default", "lexer", 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].scope.id, "br_c");
  // New writes number on after the imported ones.
  auto seq = (*trail)->AppendEvents({{"br_c", trail::EventKind::kWarning, "", "w", 0, false, 8}});
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_GT(seq->front(), page->events[0].seq);
  // The session's oldest root is the one its next use finds (decision 0028).
  trail::SessionRef s;
  s.session_id = "s1";
  auto root = (*trail)->OpenSessionRoot(testing::MakeScope("ses_new", "", "session", s));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(*root, "ses_1");

  auto conv = b.OpenConversationStore();
  ASSERT_TRUE(conv.ok());
  auto state = (*conv)->Load({"local", "conv", "th"});
  ASSERT_TRUE(state.ok() && state->has_value());
  EXPECT_EQ((*state)->frontier[0], std::string("\0\xff", 2));
  ASSERT_EQ((*state)->rewrites.size(), 1u);

  auto mem = b.OpenMemoryStore();
  ASSERT_TRUE(mem.ok());
  // The stems and term counts are not transferred: the store derives them again at open.
  auto found = (*mem)->FindMatches({"local", "default", std::nullopt, false}, {"walrus"}, 5);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->items.size(), 1u);
  EXPECT_EQ(found->global.terms["walrus"].content, 1);
  EXPECT_EQ((*mem)->History("mem_1")->size(), 1u);
  auto vectors = (*mem)->AllVectors("m");
  ASSERT_TRUE(vectors.ok());
  ASSERT_EQ(vectors->size(), 1u);
  EXPECT_EQ((*vectors)[0].vector[1], -2.5f);

  auto sessions = b.OpenMcpSessionStore();
  ASSERT_TRUE(sessions.ok());
  auto open = (*sessions)->Get("sid_open");
  ASSERT_TRUE(open.ok() && open->has_value());
  EXPECT_EQ((*open)->client_capabilities, "{\"roots\":{}}");
  EXPECT_EQ((*open)->ended_ms, 0);
  auto ended = (*sessions)->Get("sid_ended");
  ASSERT_TRUE(ended.ok() && ended->has_value());
  EXPECT_EQ((*ended)->ended_ms, 3);
  EXPECT_EQ((*ended)->end_reason, "client deleted session");
}

TEST(StoreTransferTest, SqliteToPostgresAndBackKeepsEverything) {
  PgBackend pg;
  if (!pg.SkipReason().empty()) GTEST_SKIP() << pg.SkipReason();
  SqliteBackend sqlite;
  Fill(sqlite);
  std::stringstream dump;
  auto exported = ExportTables(SqliteAt(sqlite.path()), dump);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_GT(*exported, 10);
  BackendOptions to_pg;
  to_pg.kind = BackendKind::kPostgres;
  to_pg.postgres_conninfo = pg.conninfo();
  to_pg.postgres_pool_size = 1;
  to_pg.one_shot = true;
  auto imported = ImportTables(to_pg, dump);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(*imported, *exported);
  // Importing twice is refused: the target is no longer empty.
  dump.clear();
  dump.seekg(0);
  EXPECT_EQ(ImportTables(to_pg, dump).status().code(), absl::StatusCode::kFailedPrecondition);

  std::stringstream back;
  auto exported_pg = ExportTables(to_pg, back);
  ASSERT_TRUE(exported_pg.ok()) << exported_pg.status();
  EXPECT_EQ(*exported_pg, *exported);
  Check(pg);  // (writes one more event into the PostgreSQL copy)
  SqliteBackend again;
  auto imported_back = ImportTables(SqliteAt(again.path()), back);
  ASSERT_TRUE(imported_back.ok()) << imported_back.status();
  Check(again);
}

TEST(StoreTransferTest, AMalformedStreamIsRefusedNamingTheLine) {
  SqliteBackend target;
  std::stringstream s("{\"contextd_export\":1}\n{\"table\":\"branches\",\"row\":{\"id\":1}}\n");
  auto r = ImportTables(SqliteAt(target.path()), s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status();
  std::stringstream none("{\"table\":\"branches\",\"row\":{}}\n");
  EXPECT_FALSE(ImportTables(SqliteAt(target.path()), none).ok());
}

}  // namespace
}  // namespace contextd::store
