// Test-only: a storage backend the store contract tests run against (SQLite in a temp dir, or a
// fresh database on the PostgreSQL test server). Each test gets a new, empty database; Open*
// opens another instance (connection, pool) on that same database, as a second process would.
// Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "folding/branch_store.h"
#include "folding/outbox_store.h"
#include "memory/memory_store.h"
#include "model/conversation_store.h"
#include "store/mcp_session_store.h"
#include "store/project_usage.h"
#include "store/retention.h"
#include "trail/trail_store.h"

namespace contextd::store::testing {

class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  // Non-empty: the backend cannot run here (the tests skip with this message).
  virtual std::string SkipReason() { return ""; }
  virtual absl::StatusOr<std::unique_ptr<folding::BranchStore>> OpenBranchStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<trail::TrailStore>> OpenTrailStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<model::ConversationStore>> OpenConversationStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenMemoryStore() = 0;
  virtual absl::StatusOr<std::unique_ptr<McpSessionStore>> OpenMcpSessionStore() = 0;
  // The retention sweep over this backend's database (store/retention.h).
  virtual absl::StatusOr<std::unique_ptr<RetentionStore>> OpenRetentionStore() = 0;
  // What `contextd usage` reads (the conversation store's UsageByProject).
  virtual absl::StatusOr<std::vector<ProjectUsage>> UsageByProject(std::string_view tenant,
                                                                   int64_t since_ms) = 0;
  // The outbox that publishes the rows `writer` (a store this backend opened) writes in its
  // branch writes: the same owner (PostgreSQL), the same file (SQLite).
  virtual absl::StatusOr<std::unique_ptr<folding::OutboxStore>> OpenOutboxStore(
      folding::BranchStore& writer) = 0;
};

// A named way to make a backend with a fresh database (a test parameter).
struct BackendFactory {
  std::string name;
  std::function<std::unique_ptr<StoreBackend>()> make;
};

inline std::string BackendName(const ::testing::TestParamInfo<BackendFactory>& info) {
  return info.param.name;
}

}  // namespace contextd::store::testing
