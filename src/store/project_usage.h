// ProjectUsage: the model gateway's usage summed per (tenant, project), as `contextd usage` reads
// it from either store (SqliteConversationStore::UsageByProject, PgConversationStore's). A plain
// value; no synchronisation.
#pragma once

#include <string>

#include "model/conversation_store.h"

namespace contextd::store {

// The usage of one (tenant, project) pair.
struct ProjectUsage {
  std::string tenant;
  std::string project;
  model::UsageTotals totals;
};

}  // namespace contextd::store
