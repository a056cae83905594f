#include "store/internal/memory_search.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace contextd::store {

std::vector<std::string> KeepRarest(const memory::CorpusStats& global,
                                    const std::vector<std::string>& known) {
  std::vector<std::pair<int64_t, const std::string*>> by_df;
  for (const std::string& t : known) {
    auto it = global.terms.find(t);
    if (it != global.terms.end()) by_df.emplace_back(it->second.content + it->second.task, &t);
  }
  std::stable_sort(by_df.begin(), by_df.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // The rarest terms carry most of BM25's weight (idf); common ones cost the most postings.
  std::vector<std::string> kept;
  int64_t postings = 0;
  for (const auto& [df, term] : by_df) {
    if (!kept.empty() && (postings + df > kPostingsBudget || kept.size() >= kMaxQueryTerms)) break;
    postings += df;
    kept.push_back(*term);
  }
  return kept;
}

TermCounts CountStems(const memory::ItemStems& stems) {
  TermCounts counts;
  counts.items = 1;
  for (const std::string* field : {&stems.title, &stems.body, &stems.tags}) {
    for (std::string_view stem : memory::SplitStems(*field)) {
      counts.df[std::string(stem)].content = 1;
      ++counts.content_length;
    }
  }
  for (const std::string* field : {&stems.task, &stems.prompt}) {
    for (std::string_view stem : memory::SplitStems(*field)) {
      counts.df[std::string(stem)].task = 1;
      ++counts.task_length;
    }
  }
  return counts;
}

}  // namespace contextd::store
