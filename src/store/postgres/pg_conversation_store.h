// PgConversationStore: the model gateway's ConversationStore in PostgreSQL (tables model_threads,
// model_rewrites, model_usage of pg_migrations.h; frontier, keys and values as bytea, the frontier
// encoded as in SQLite: store/conversation_rows.h). Each Save and RecordUsage is one transaction,
// committed before it returns. Thread-safe: each call takes a pooled connection, so any instance
// sharing the database continues a conversation another one began.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/conversation_store.h"
#include "store/postgres/pg_database.h"
#include "store/project_usage.h"

namespace contextd::store {

class PgConversationStore final : public model::ConversationStore {
 public:
  static absl::StatusOr<std::unique_ptr<PgConversationStore>> Open(const PgOptions& options);
  static std::unique_ptr<PgConversationStore> Create(std::shared_ptr<PgDatabase> db);

  // As SqliteConversationStore: a frontier that does not decode, or an unknown rewrite kind in
  // the database, is Internal naming the thread; an unknown kind in a Save fails the whole save
  // (FailedPrecondition, from the CHECK constraint).
  absl::StatusOr<std::optional<model::ConversationState>> Load(
      const model::ConversationKey& key) override;
  absl::Status Save(const model::ConversationKey& key,
                    const model::ConversationUpdate& update) override;
  absl::Status RecordUsage(const model::UsageRecord& record) override;
  absl::StatusOr<model::BranchViewUsage> ViewUsage(std::string_view tenant,
                                                   std::string_view branch_id) override;
  absl::StatusOr<model::UsageTotals> Totals(std::string_view tenant,
                                            std::string_view branch_id) override;
  // As SqliteConversationStore::RecentConversations.
  absl::StatusOr<std::vector<model::ConversationSummary>> RecentConversations(
      std::string_view tenant, int limit) override;
  // As SqliteConversationStore::UsageByProject: per (tenant, project) of `tenant` (every tenant
  // when empty) since `since_ms`, ordered by tenant and project.
  absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                           int64_t since_ms);

 private:
  explicit PgConversationStore(std::shared_ptr<PgDatabase> db) : db_(std::move(db)) {}
  std::shared_ptr<PgDatabase> db_;
};

}  // namespace contextd::store
