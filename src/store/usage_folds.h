// How model_usage keeps a request's skipped folds (folds_skipped: a JSON object of skip reason ->
// count as text, '' when none), shared by the SQLite and PostgreSQL stores and the import, and
// the per-conversation merge of those values. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace contextd::store {

// `skipped` as stored: '' when it is empty (or every count is 0), else a JSON object whose
// members are the reasons in byte order with positive counts ({"not_at_tail":2}). Reasons that
// are not valid UTF-8 are written with U+FFFD in place of the bad bytes.
std::string EncodeFoldsSkipped(const std::map<std::string, int>& skipped);

// The inverse: '' is empty. InvalidArgument when `text` is not a JSON object whose values are
// non-negative integers.
absl::StatusOr<std::map<std::string, int64_t>> DecodeFoldsSkipped(std::string_view text);

// Adds the values of `joined` (stored values separated by '\n', as the stores' per-conversation
// query aggregates them) to `into`. A value that does not decode is left out (a summary shows
// what it can read rather than failing).
void MergeFoldsSkipped(std::string_view joined, std::map<std::string, int64_t>& into);

}  // namespace contextd::store
