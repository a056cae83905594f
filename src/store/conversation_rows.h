// The model gateway's conversation rows written once for both backends (store/rows.h's Row): the
// frontier's stored encoding, a thread's state, its rewrites, and the usage aggregates that
// `contextd usage`, `contextd status` and the viewer read. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/conversation_store.h"
#include "store/project_usage.h"
#include "store/rows.h"

namespace contextd::store {

// The frontier as stored in model_threads.frontier: each hash as an unsigned LEB128 varint of its
// length followed by its bytes, in order (no count, no terminator; an empty list is empty).
std::string EncodeFrontier(const std::vector<std::string>& hashes);
// The inverse of EncodeFrontier. InvalidArgument (saying where) if `blob` is not such a list: a
// truncated or over-long varint, or a length past the end of the blob.
absl::StatusOr<std::vector<std::string>> DecodeFrontier(std::string_view blob);

// "model thread <tenant>/<conversation>/<thread>", for errors.
std::string ThreadName(const model::ConversationKey& key);
// `st` with its message prefixed by the thread it concerns (OK stays OK).
absl::Status AboutThread(const model::ConversationKey& key, const absl::Status& st);

// A thread's state from (frontier, requests, created_ms, last_ms) of model_threads, rewrites not
// yet read. Internal naming the thread for a corrupt frontier.
absl::StatusOr<model::ConversationState> ThreadFromRow(const Row& row,
                                                       const model::ConversationKey& key);
// One rewrite from (kind, key, value) of model_rewrites. Internal naming the thread for a kind
// this binary does not know.
absl::StatusOr<model::Rewrite> RewriteFromRow(const Row& row, const model::ConversationKey& key);

// The aggregate columns of model_usage that UsageTotalsFromRow reads, in order: COUNT, input,
// cache read, cache creation, output, tokens before, tokens after, last at_ms.
inline constexpr char kUsageTotalsColumns[] =
    "COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(cache_read_input_tokens), 0), "
    "COALESCE(SUM(cache_creation_input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
    "COALESCE(SUM(tokens_before), 0), COALESCE(SUM(tokens_after), 0), COALESCE(MAX(at_ms), 0)";
model::UsageTotals UsageTotalsFromRow(const Row& row, int first = 0);

// The columns ProjectUsageFromRow reads, over a subquery `u` of (tenant, project, n, the four
// token counts, tokens_before, tokens_after, at_ms, folds_new, folds_skipped) that each backend
// writes in its dialect: tenant, project, then UsageTotalsFromRow's eight, folds_new,
// folds_skipped.
inline constexpr char kProjectUsageColumns[] =
    "tenant, project, SUM(n), COALESCE(SUM(input_tokens), 0), "
    "COALESCE(SUM(cache_read_input_tokens), 0), COALESCE(SUM(cache_creation_input_tokens), 0), "
    "COALESCE(SUM(output_tokens), 0), COALESCE(SUM(tokens_before), 0), "
    "COALESCE(SUM(tokens_after), 0), COALESCE(MAX(at_ms), 0), COALESCE(SUM(folds_new), 0), "
    "COALESCE(SUM(folds_skipped), 0)";
ProjectUsage ProjectUsageFromRow(const Row& row);
// The columns ViewUsageFromRow reads (isolated requests, inherited requests, tokens spared), over
// model_usage rows.
inline constexpr char kViewUsageColumns[] =
    "COALESCE(SUM(CASE WHEN branch_view = 'isolated' THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(CASE WHEN branch_view = 'inherited' THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(view_tokens_spared), 0)";
model::BranchViewUsage ViewUsageFromRow(const Row& row);
// (conversation, project, last at_ms, first at_ms, requests, folds_new, tokens before, tokens
// after, the skipped-fold objects joined by newlines or NULL, requests in an isolated view, the
// tokens those views spared).
model::ConversationSummary ConversationSummaryFromRow(const Row& row);

}  // namespace contextd::store
