// What both memory stores share (sqlite/sqlite_memory_store.h, postgres/pg_memory_store.h): the
// postings budget that bounds a search's cost however large the bank grows, which terms a search
// keeps, and what an item's stems add to the term statistics. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memory/memory_store.h"
#include "memory/terms.h"

namespace contextd::store {

// A search reads the postings of its rarest terms until their document frequencies (content and
// task together) add up to this many (at least one term is always kept), at most kMaxQueryTerms
// terms.
inline constexpr int64_t kPostingsBudget = 1000;
inline constexpr size_t kMaxQueryTerms = 64;

// The `known` terms (all in `global.terms`) a search keeps: rarest first, within the budget.
std::vector<std::string> KeepRarest(const memory::CorpusStats& global,
                                    const std::vector<std::string>& known);

// What items add to the statistics: each distinct stem once per item and side, and the lengths
// (CountStems: one item).
struct TermCounts {
  std::map<std::string, memory::TermFrequency> df;
  int64_t items = 0;
  int64_t content_length = 0;
  int64_t task_length = 0;
};
TermCounts CountStems(const memory::ItemStems& stems);

}  // namespace contextd::store
