// The words the bank searches by: English Snowball stems (libstemmer) of the lowercase words of a
// text, stop words judged on the surface word before stemming. Queries (QueryTerms) and the
// texts a store indexes (ItemStems) go through the same function, so "caching", "cached" and
// "cache" are one term on both sides. Thread-safe: each thread has its own stemmer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memory/memory_item.h"

namespace contextd::memory {

// The stem of one word as ForEachWord splits them (lowercase ASCII letters and digits, bytes >=
// 0x80 kept): Snowball english; the word itself when the stemmer gives nothing.
std::string Stem(std::string_view word);

// Stems of the words of `text` worth searching for: letters and digits, 2-40 bytes, English stop
// words dropped (before stemming), each stem once, at most 64, in order of first appearance.
std::vector<std::string> QueryTerms(std::string_view text);
// The distinct stems of `text`, stop words kept and no cap (QueryTerms' stems are among them).
std::vector<std::string> IndexTerms(std::string_view text);
// Every stem of `text` in order, repeats and stop words kept, joined by single spaces: what a
// store indexes (a term's frequency and a field's length are counted on it).
std::string StemText(std::string_view text);
// Jaccard overlap of the QueryTerms sets of two texts (0 when both are empty).
double WordOverlap(std::string_view a, std::string_view b);

// The stemmed texts of an item, one per ranked field (StemText of each): what both stores keep
// beside the item and search.
struct ItemStems {
  std::string title;
  std::string body;    // description and content
  std::string tags;    // all tags
  std::string task;    // the source task's description
  std::string prompt;  // the source task's prompt
};
ItemStems StemsOf(const MemoryItem& item);

// Splits a StemText (single spaces) into its stems; the views point into `stems`.
std::vector<std::string_view> SplitStems(std::string_view stems);

}  // namespace contextd::memory
