// ProjectUsage: the model gateway's usage summed per (tenant, project), as `contextd usage` reads
// it from either store (SqliteConversationStore::UsageByProject, PgConversationStore's). A plain
// value; no synchronisation.
#pragma once

#include <cstdint>
#include <string>

#include "model/conversation_store.h"

namespace contextd::store {

// The usage of one (tenant, project) pair.
struct ProjectUsage {
  std::string tenant;
  std::string project;
  model::UsageTotals totals;
  int64_t folds_new = 0;      // folds made
  int64_t folds_skipped = 0;  // skips counted, whatever their reasons (the rollup keeps no reasons)
};

}  // namespace contextd::store
