// SqliteConversationStore: the model gateway's ConversationStore in contextd's SQLite database
// (tables model_threads, model_rewrites, model_usage of migration 0009_model_conversations.sql).
// Each Save and RecordUsage is one atomic write (Database::BeginWrite/EndWrite): durable when it
// returns, or, when the Database groups commits, once its group commits. Thread-safe: calls are
// serialised on the Database's mutex; several stores (connections, processes) may share a file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/conversation_store.h"
#include "store/project_usage.h"
#include "store/sqlite/database.h"

namespace contextd::store {

class SqliteConversationStore final : public model::ConversationStore {
 public:
  // Opens (creating and migrating) the database file at `path` with its own connection.
  static absl::StatusOr<std::unique_ptr<SqliteConversationStore>> Open(
      const std::string& path, const DatabaseOptions& options = {});
  // Uses an open database (shared with other stores); prepares the statements.
  static absl::StatusOr<std::unique_ptr<SqliteConversationStore>> Create(
      std::shared_ptr<Database> db);

  // As the interface says; a stored frontier that does not decode, or a rewrite of a kind this
  // binary does not know, is Internal naming the thread (nothing is guessed).
  absl::StatusOr<std::optional<model::ConversationState>> Load(
      const model::ConversationKey& key) override;
  // As the interface says; a rewrite whose kind is not a RewriteKind fails the whole save
  // (FailedPrecondition, from the table's CHECK constraint).
  absl::Status Save(const model::ConversationKey& key,
                    const model::ConversationUpdate& update) override;
  absl::Status RecordUsage(const model::UsageRecord& record) override;
  absl::StatusOr<model::BranchViewUsage> ViewUsage(std::string_view tenant,
                                                   std::string_view branch_id) override;
  absl::StatusOr<model::UsageTotals> Totals(std::string_view tenant,
                                            std::string_view branch_id) override;
  // As the interface says; a folds_skipped value that does not decode is left out of the sums.
  absl::StatusOr<std::vector<model::ConversationSummary>> RecentConversations(
      std::string_view tenant, int limit) override;

  // Usage summed per (tenant, project) over the requests at or after `since_ms` (unix ms; 0:
  // all), of `tenant` only when it is not empty; ordered by tenant, then project. Internal or
  // Unavailable on a database error.
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms);

  Database& database() { return *db_; }

 private:
  explicit SqliteConversationStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  absl::Status PrepareAll();
  absl::Status SaveLocked(const model::ConversationKey& key,
                          const model::ConversationUpdate& update);
  absl::Status RecordUsageLocked(const model::UsageRecord& record);

  std::shared_ptr<Database> db_;
  Statement upsert_thread_;
  Statement insert_rewrite_;
  Statement get_thread_;
  Statement get_rewrites_;
  Statement insert_usage_;
  Statement totals_by_tenant_;
  Statement totals_by_branch_;
};

}  // namespace contextd::store
