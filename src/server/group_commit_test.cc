#include "server/group_commit.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"
#include "protocol/testing/recording_sink.h"
#include "store/sqlite/database.h"
#include "store/test_util.h"

namespace contextd::server {
namespace {

using protocol::Json;

using protocol::testing::RecordingSink;

int64_t CountRows(store::Database& db) {
  std::lock_guard<std::mutex> lock(db.mutex());
  auto st = db.Prepare("SELECT COUNT(*) FROM schema_version WHERE name = 'gc'");
  EXPECT_TRUE(st.ok());
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row);
  return st->Int(0);
}

// An McpServer whose tool "write" inserts a row (one write) and replies, over a real SQLite file
// in group-commit mode, with a second connection to see what is durable.
class GroupCommitTest : public ::testing::Test {
 protected:
  GroupCommitTest() : executor_(clock_), server_(executor_, {"gc-test", "1", ""}) {}

  void SetUp() override {
    auto db = store::Database::Open(tmp_.File("gc.db"));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    auto observer = store::Database::Open(tmp_.File("gc.db"));
    ASSERT_TRUE(observer.ok());
    observer_ = std::move(*observer);
    gate_ = std::make_unique<GroupCommit>(
        executor_,
        [this]() -> absl::Status {
          // At commit time nothing that depends on the group may have left yet.
          sent_before_commit_ += sink_->Take().size();
          visible_before_commit_ = CountRows(*observer_);
          return db_->CommitGroup();
        },
        [this](const absl::Status& st) { failures_seen_.push_back(std::string(st.message())); },
        nullptr, [this] { delivered_before_upkeep_.push_back(sink_->size()); });
    server_.SetOutboundGate(gate_.get());
    {
      std::lock_guard<std::mutex> lock(db_->mutex());
      ASSERT_TRUE(db_->Exec("CREATE TABLE gc_parent (id INTEGER PRIMARY KEY); CREATE TABLE "
                            "gc_child (parent INTEGER REFERENCES gc_parent(id))")
                      .ok());
    }
    db_->EnableGroupCommit([this] { gate_->OnGroupOpen(); });
    // A write that succeeds but makes its group's COMMIT fail: a deferred foreign-key violation
    // is checked only at COMMIT, as a real storage failure would surface there.
    ASSERT_TRUE(server_
                    .AddTool({"write_orphan", "Write orphan", "Breaks the commit",
                              Json{{"type", "object"}}, nullptr, nullptr},
                             [this](std::shared_ptr<protocol::ToolCall> call) {
                               std::lock_guard<std::mutex> lock(db_->mutex());
                               absl::Status st = db_->BeginWrite();
                               if (st.ok()) {
                                 st = db_->EndWrite(
                                     db_->Exec("PRAGMA defer_foreign_keys=ON; INSERT INTO "
                                               "gc_child VALUES (42)"));
                               }
                               call->Finish(protocol::TextResult(st.ok() ? "written" : "failed"));
                             })
                    .ok());
    ASSERT_TRUE(
        server_
            .AddTool({"write", "Write", "Writes a row", Json{{"type", "object"}}, nullptr, nullptr},
                     [this](std::shared_ptr<protocol::ToolCall> call) {
                       std::lock_guard<std::mutex> lock(db_->mutex());
                       absl::Status st = db_->BeginWrite();
                       if (st.ok()) {
                         st = db_->EndWrite(db_->Exec("INSERT INTO schema_version VALUES (" +
                                                      std::to_string(next_version_++) +
                                                      ", 'gc', 0)"));
                       }
                       call->Finish(protocol::TextResult(st.ok() ? "written" : "failed"));
                     })
            .ok());
    protocol::SessionInfo info;
    info.session_id = "s1";
    info.transport = "test";
    session_ = server_.CreateSession(info, sink_);
    executor_.RunUntilIdle();
    Send(protocol::MakeRequest("init", "initialize",
                               {{"protocolVersion", "2025-11-25"},
                                {"capabilities", Json::object()},
                                {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    Send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    executor_.RunUntilIdle();
    sink_->Take();
  }

  void Send(const Json& message) {
    protocol::Incoming in = protocol::ParseIncoming(protocol::Serialize(message));
    for (auto& item : in.items) session_->Receive(std::move(std::get<protocol::Message>(item)));
  }

  Json CallWrite(int id, const char* tool = "write") {
    return protocol::MakeRequest(id, "tools/call", {{"name", tool}, {"arguments", Json::object()}});
  }

  store::TempDir tmp_;
  base::FakeClock clock_;
  base::ManualExecutor executor_;
  std::unique_ptr<store::Database> db_;
  std::unique_ptr<store::Database> observer_;
  std::unique_ptr<GroupCommit> gate_;
  protocol::McpServer server_;
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  std::shared_ptr<protocol::Session> session_;
  int next_version_ = 1000;
  size_t sent_before_commit_ = 0;
  int64_t visible_before_commit_ = -1;
  std::vector<std::string> failures_seen_;
  // What had gone out when after_delivery ran, once per successful commit.
  std::vector<size_t> delivered_before_upkeep_;
};

TEST_F(GroupCommitTest, RepliesOfOneBatchWaitForItsSingleCommit) {
  for (int id = 1; id <= 5; ++id) Send(CallWrite(id));
  executor_.RunUntilIdle();
  EXPECT_EQ(gate_->commits(), 1);        // five writes, one commit
  EXPECT_EQ(sent_before_commit_, 0u);    // no reply left before it
  EXPECT_EQ(visible_before_commit_, 0);  // and nothing was durable before it
  std::vector<Json> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sent[i]["id"], i + 1);  // in order
    EXPECT_EQ(sent[i]["result"]["content"][0]["text"], "written");
  }
  EXPECT_EQ(CountRows(*observer_), 5);
  EXPECT_EQ(gate_->held_total(), 5);
}

TEST_F(GroupCommitTest, MessagesWithoutWritesGoOutAtOnce) {
  Send(protocol::MakeRequest(7, "ping", nullptr));
  executor_.RunUntilIdle();
  EXPECT_EQ(gate_->commits(), 0);
  EXPECT_EQ(gate_->held_total(), 0);
  std::vector<Json> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["id"], 7);  // the message itself, not what is left of it after a move
  EXPECT_TRUE(sent[0].contains("result")) << sent[0].dump();
}

TEST_F(GroupCommitTest, AFailedCommitTurnsHeldRepliesIntoErrors) {
  Send(CallWrite(1));
  Send(CallWrite(2, "write_orphan"));
  Send(protocol::MakeRequest(3, "ping", nullptr));  // held behind the writes: same batch
  executor_.RunUntilIdle();
  EXPECT_EQ(gate_->failures(), 1);
  ASSERT_EQ(failures_seen_.size(), 1u);
  EXPECT_NE(failures_seen_[0].find("FOREIGN KEY"), std::string::npos) << failures_seen_[0];
  std::vector<Json> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(sent[i]["id"], i + 1);
    EXPECT_EQ(sent[i]["error"]["code"], protocol::kInternalError);
    EXPECT_NE(sent[i]["error"]["message"].get<std::string>().find("could not save"),
              std::string::npos);
  }
  // Every held result becomes an error: even a read may have shown what was lost.
  EXPECT_EQ(sent[2]["id"], 3);
  EXPECT_EQ(sent[2]["error"]["code"], protocol::kInternalError);
  EXPECT_EQ(CountRows(*observer_), 0);  // the good write went down with its group
  // The engine goes on with the next group.
  Send(CallWrite(4));
  executor_.RunUntilIdle();
  sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["result"]["content"][0]["text"], "written");
  EXPECT_EQ(gate_->commits(), 1);
  EXPECT_EQ(CountRows(*observer_), 1);
}

TEST_F(GroupCommitTest, UpkeepRunsAfterACommitsRepliesWentOutAndNotAfterAFailure) {
  Send(CallWrite(1));
  Send(CallWrite(2));
  executor_.RunUntilIdle();
  ASSERT_EQ(delivered_before_upkeep_.size(), 1u);
  EXPECT_EQ(delivered_before_upkeep_[0], 2u);  // both replies were out before it ran
  Send(CallWrite(3, "write_orphan"));
  executor_.RunUntilIdle();
  EXPECT_EQ(gate_->failures(), 1);
  EXPECT_EQ(delivered_before_upkeep_.size(), 1u);
}

// Session::CloseThen (an HTTP DELETE's answer) is confirmed only once what the session's end
// wrote is committed, with the commit's outcome.
TEST_F(GroupCommitTest, ASessionsEndIsConfirmedAfterTheCommitOfWhatItWrote) {
  server_.SetSessionHooks(
      {nullptr,
       [this](const protocol::SessionInfo&, std::string_view why) {
         std::lock_guard<std::mutex> lock(db_->mutex());
         absl::Status st = db_->BeginWrite();
         if (st.ok()) {
           st = db_->EndWrite(db_->Exec(why == "orphan"
                                            ? "PRAGMA defer_foreign_keys=ON; INSERT INTO gc_child "
                                              "VALUES (42)"
                                            : "INSERT INTO schema_version VALUES (" +
                                                  std::to_string(next_version_++) + ", 'gc', 0)"));
         }
         EXPECT_TRUE(st.ok()) << st;
       },
       nullptr});
  std::vector<absl::Status> outcomes;
  std::vector<int64_t> durable_at_confirmation;
  auto done = [&](const absl::Status& st) {
    outcomes.push_back(st);
    durable_at_confirmation.push_back(CountRows(*observer_));
  };
  session_->CloseThen("client deleted session", done);
  executor_.RunUntilIdle();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0];
  EXPECT_EQ(durable_at_confirmation[0], 1);
  EXPECT_EQ(gate_->commits(), 1);
  // Already closed: nothing more is written, and the confirmation comes at once.
  session_->CloseThen("again", done);
  executor_.RunUntilIdle();
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[1].ok());
  EXPECT_EQ(gate_->commits(), 1);

  // An end whose commit fails is confirmed with the error.
  protocol::SessionInfo second;
  second.session_id = "s2";
  second.transport = "test";
  auto other = server_.CreateSession(second, sink_);
  other->CloseThen("orphan", done);
  executor_.RunUntilIdle();
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_FALSE(outcomes[2].ok());
  EXPECT_NE(outcomes[2].message().find("FOREIGN KEY"), std::string::npos) << outcomes[2];
  EXPECT_EQ(gate_->failures(), 1);
}

TEST_F(GroupCommitTest, FlushWithNothingOpenIsANoOp) {
  gate_->Flush();
  EXPECT_EQ(gate_->commits(), 0);
  EXPECT_TRUE(sink_->Take().empty());
  EXPECT_FALSE(gate_->Holding());
}

}  // namespace
}  // namespace contextd::server
