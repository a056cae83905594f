// What both memory stores' BM25 queries keep (sqlite/sqlite_memory_store.h,
// postgres/pg_memory_store.h), so that a query's cost is bounded however large the bank grows.
#pragma once

#include <cstddef>
#include <cstdint>

namespace contextd::store {

// A BM25 query reads the postings of its rarest terms until their document frequencies add up to
// this many (at least one term is always kept), at most kMaxQueryTerms terms.
inline constexpr int64_t kPostingsBudget = 1000;
inline constexpr size_t kMaxQueryTerms = 12;

}  // namespace contextd::store
